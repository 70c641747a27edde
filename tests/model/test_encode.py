"""The runtime encoder on the real committed model."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from companion.emotions import EMOTIONS
from companion.errors import ConfigError, ModelError
from companion.model.encode import Encoder, TextEncoding, default_model_dir
from companion.model.evaluate import evaluate_emotions
from companion.model.personalize import FAMILY_OF
from tests.helpers.run import REPO, run_cli

SAD = "My grandmother died last night and I cried for hours, I miss her so much."
JOYFUL = "We won the championship today and everyone was cheering, best day of my life!"


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder.load()


def model_copy(tmp_path: Path) -> Path:
    """Copy the shipped model, tokenizer and sidecar to tmp; return the copied .onnx path."""
    src = max(default_model_dir().glob("companion-empathy-*.onnx"))
    for f in src.parent.glob(src.name + "*"):
        shutil.copy(f, tmp_path / f.name)
    meta = json.loads((tmp_path / (src.name + ".json")).read_text())
    shutil.copy(src.with_name(meta["tokenizer"]["file"]), tmp_path / meta["tokenizer"]["file"])
    return tmp_path / src.name


def test_default_model_loads_with_verified_checksum(encoder: Encoder) -> None:
    assert encoder.version == "companion-empathy-2"
    assert encoder.meta["labels"] == list(EMOTIONS)
    assert len(encoder.meta["sha256"]) == 64


def test_corrupted_copy_is_rejected(tmp_path: Path) -> None:
    path = model_copy(tmp_path)
    Encoder.load(path)  # the intact copy loads
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ModelError, match="sha256"):
        Encoder.load(path)


def test_missing_sidecar_is_rejected(tmp_path: Path) -> None:
    path = model_copy(tmp_path)
    path.with_name(path.name + ".json").unlink()
    with pytest.raises(ModelError, match="sidecar"):
        Encoder.load(path)


def test_embeddings_normalised_and_deterministic(encoder: Encoder) -> None:
    a, b = encoder.encode(SAD), encoder.encode(SAD)
    assert isinstance(a, TextEncoding)
    assert a.embedding.dtype == np.float32 and a.embedding.shape == (384,)
    assert a.emotions.dtype == np.float32 and a.emotions.shape == (len(EMOTIONS),)
    assert abs(float(np.linalg.norm(a.embedding)) - 1.0) < 1e-5
    assert np.array_equal(a.embedding, b.embedding) and np.array_equal(a.emotions, b.emotions)
    many = encoder.encode_many([JOYFUL, SAD])
    assert np.array_equal(many[1].embedding, a.embedding)
    assert not np.allclose(many[0].embedding, a.embedding)


def test_related_texts_are_closer_than_unrelated(encoder: Encoder) -> None:
    dog = encoder.encode("My old dog passed away and the house feels empty without him.")
    pet = encoder.encode("I lost my cat last week and I keep expecting her at the door.")
    tax = encoder.encode("The quarterly tax form asks for the invoice numbers in column B.")
    assert float(dog.embedding @ pet.embedding) > float(dog.embedding @ tax.embedding) + 0.2


def test_long_input_is_windowed_not_truncated(encoder: Encoder) -> None:
    filler = " ".join(
        f"On day {i} I walked to the market, bought some bread and talked with the baker."
        for i in range(30)
    )
    windows = encoder.token_windows(filler)
    assert windows.shape[0] > 2 and windows.shape[1] == encoder.window
    plain = encoder.encode(filler)
    with_fact = encoder.encode(filler + " Then my house burned down and I lost everything.")
    assert float(plain.embedding @ with_fact.embedding) < 0.999
    assert not np.allclose(plain.emotions, with_fact.emotions, atol=1e-3)


def test_a_turn_of_any_length_is_encoded_in_bounded_windows(encoder: Encoder) -> None:
    from tokenizers import Tokenizer

    from companion.model.encode import MAX_WINDOWS, resolve_model

    story = " ".join(f"On day {i} I fixed the fence with my neighbour and we talked." for i in
                     range(170))  # fmt: skip
    assert len(story.split()) >= 2000
    # The shipped tokenizer, loaded apart from the encoder: its ids are what the windows hold.
    tok = Tokenizer.from_file(str(resolve_model().with_name(encoder.meta["tokenizer"]["file"])))
    tok.no_padding()
    tok.no_truncation()
    body = tok.encode(story, add_special_tokens=False).ids
    windows = encoder.token_windows(story)
    assert windows.shape == (MAX_WINDOWS, encoder.window)  # not ceil(len / 126) windows
    width = encoder.window - 2
    assert windows[0, 1:-1].tolist() == body[:width]  # the beginning...
    assert windows[-1, 1:-1].tolist() == body[-width:]  # ...and the end are always encoded
    ending = encoder.encode(story + " Then the storm took the roof and I lost everything.")
    assert float(encoder.encode(story).embedding @ ending.embedding) < 0.999


def test_emotions_are_probabilities_and_tell_sad_from_joyful(encoder: Encoder) -> None:
    sad, joy = encoder.encode(SAD), encoder.encode(JOYFUL)
    for enc in (sad, joy):
        assert abs(float(enc.emotions.sum()) - 1.0) < 1e-5 and float(enc.emotions.min()) >= 0
    sad_label, sad_p = sad.top_emotion()
    joy_label, _ = joy.top_emotion()
    assert sad_label != joy_label
    assert 0 < sad_p <= 1
    assert FAMILY_OF[EMOTIONS.index(sad_label)] != FAMILY_OF[EMOTIONS.index(joy_label)]
    assert sad_label in {"sad", "devastated", "lonely", "sentimental", "nostalgic"}
    assert joy_label in {"joyful", "excited", "proud", "content", "impressed", "grateful"}


def test_runtime_never_imports_torch() -> None:
    code = (
        "import sys\n"
        "from companion.model.encode import Encoder\n"
        "e = Encoder.load(); e.encode('a short test sentence ' * 80)\n"
        "from companion.model import similarity, personalize\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def write_csv(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("label,content\n" + "".join(f'{a},"{b}"\n' for a, b in rows))
    return path


def test_evaluate_emotions_and_cli_json_line(tmp_path: Path, encoder: Encoder) -> None:
    label = {name: str(i + 1) for i, name in enumerate(EMOTIONS)}
    csv_path = write_csv(
        tmp_path / "small.csv",
        [(label["sad"], SAD), (label["joyful"], JOYFUL),
         (label["afraid"], "I heard someone breaking into the house at night and froze."),
         (label["angry"], "My neighbour dumped his trash in my yard again and I yelled at him.")],
    )  # fmt: skip
    result = evaluate_emotions(encoder, csv_path)
    assert result["n"] == 4 and 0 <= result["top1"] <= result["top3"] <= 1
    out = run_cli("model", "eval", "--emotions", str(csv_path))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1 and json.loads(lines[0]) == result


def test_cli_eval_bad_csv_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("label,content\n6,fine text\nsad,label is not a number\n")
    with pytest.raises(ConfigError, match=r"bad\.csv:3"):
        evaluate_emotions(None, bad)  # type: ignore[arg-type]  # fails before using the encoder
    out = run_cli("model", "eval", "--emotions", str(bad))
    assert out.returncode == 2
    err = out.stderr.strip().splitlines()
    assert len(err) == 1 and "bad.csv:3" in err[0] and out.stdout == ""
    good = write_csv(tmp_path / "good.csv", [("6", SAD)])
    out = run_cli("model", "eval", "--emotions", str(good), "--model", str(tmp_path / "no.onnx"))
    err = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(err) == 1 and "no.onnx" in err[0]


def test_precision_at_k_counts_same_label_neighbours() -> None:
    from companion.model.evaluate import precision_at

    labels = np.array([0, 0, 1, 1])
    s = np.array([[9, 1, 5, 0], [3, 9, 2, 1], [0, 0, 9, 1], [2, 2, 0, 9]], float)
    # top 2 (self excluded): row 0 -> 2, 1 (miss, hit); row 1 -> 0, 2 (hit, miss);
    # row 2 -> 3, 0 (hit, miss: 0 and 1 tie, lower index first); row 3 -> 0, 1 (miss, miss)
    out = precision_at(s, labels, (1, 2))
    assert out == {"p_at_1": 0.5, "p_at_2": 0.375}


def test_evaluate_matching_cli_weights_and_baselines(tmp_path: Path) -> None:
    label = {name: str(i + 1) for i, name in enumerate(EMOTIONS)}
    rows = [
        (label["sad"], SAD),
        (label["sad"], "My grandmother passed away and I cried at her funeral all afternoon."),
        (label["joyful"], JOYFUL),
        (label["joyful"], "We won the local football cup and danced in the street, so happy."),
        (label["afraid"], "I heard someone breaking into the house at night and froze."),
        (label["afraid"], "The plane shook so hard in the storm I was sure we would crash."),
    ]
    csv_path = write_csv(tmp_path / "m.csv", rows)
    out = run_cli("model", "eval", "--matching", str(csv_path))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["n"] == 6 and result["weights"] == {"semantic": 0.2, "emotion": 0.8}
    assert result["emotion_similarity"] == "agreement"
    assert set(result["cosine"]) == set(result["emotion_only"]) == {"p_at_1", "p_at_5"}
    assert result["p_at_1"] >= 0.5  # pairs of clearly same-feeling stories
    only = json.loads(run_cli("model", "eval", "--matching", str(csv_path),
                              "--semantic", "0", "--emotion", "1").stdout)  # fmt: skip
    assert {k: only[k] for k in ("p_at_1", "p_at_5")} == result["emotion_only"]
    old = json.loads(run_cli("model", "eval", "--matching", str(csv_path),
                             "--emotion-similarity", "bhattacharyya").stdout)  # fmt: skip
    assert old["emotion_similarity"] == "bhattacharyya" and old["weights"] == result["weights"]
    both = run_cli("model", "eval", "--matching", str(csv_path), "--emotions", str(csv_path))
    assert both.returncode == 2 and "one of --emotions" in both.stderr


def test_model_eval_of_a_file_prints_every_evaluation_once_each(tmp_path: Path) -> None:
    """One encoding of the file; the three lines keep the field names of the single options,
    so numbers from older models stay comparable."""
    label = {name: str(i + 1) for i, name in enumerate(EMOTIONS)}
    rows = [
        (label["sad"], "The vet said there was nothing more to do for our old spaniel."),
        (label["sad"], "My pen friend of forty years stopped writing and I found out why."),
        (label["proud"], "My nephew passed his driving test on the first go after I taught him."),
        (label["proud"], "The kitchen cabinet I built from scrap wood finally has its doors on."),
    ]
    csv_path = write_csv(tmp_path / "all.csv", rows)
    out = run_cli("model", "eval", str(csv_path))
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [line["eval"] for line in lines] == ["emotions", "matching", "acknowledgements"]
    assert {line["model"] for line in lines} == {Encoder.load().version}
    singles = {"emotions": "--emotions", "matching": "--matching",
               "acknowledgements": "--acknowledgements"}  # fmt: skip
    for line in lines:
        alone = json.loads(run_cli("model", "eval", singles[line["eval"]], str(csv_path)).stdout)
        assert {k: v for k, v in line.items() if k not in ("eval", "model")} == alone
