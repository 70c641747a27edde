"""Voice: audio devices and WAV files (`audio`), speech recognition (`listen`), which
recogniser and vosk model a home uses (`backend`, pure, shared with `doctor`), turn-taking
(`turns`, pure), speech synthesis (`speak`), the voice channels (`channels`), installing a
vosk model (`asr`), an answer's calibrated confidence (`confidence`, pure), the recogniser's
per-device adaptation (`adaptation`) and whether a recogniser knows the protocol's answer
words (`vocab`, pure).

May import: the foundation modules, `settings` and `engine` (the `Channel` interface, the
protocol, the fitted answer numbers in `confirm`). Never `model`, `research`, `service`,
`ops`, `app` or `cli`. vosk, pocketsphinx, sounddevice and pyttsx3 are imported only when a
recogniser, device or speaker is made.
"""
