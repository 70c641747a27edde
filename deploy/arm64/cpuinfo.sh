#!/usr/bin/env bash
# What a Pi's kernel shows in /proc/cpuinfo for CORE (cortex-a53|cortex-a72|cortex-a76), one
# entry per host CPU. Under qemu-user a program reads the host's x86 /proc/cpuinfo, which
# onnxruntime's CPU detection cannot parse (it segfaults on import): the smoke and the
# rehearsal's arm64 device bind-mount this over it.
#   bash deploy/arm64/cpuinfo.sh cortex-a72 > cpuinfo
set -euo pipefail
case "${1:-}" in
  cortex-a53) part=0xd03 features="fp asimd evtstrm crc32 cpuid" ;;
  cortex-a72) part=0xd08 features="fp asimd evtstrm crc32 cpuid" ;;
  cortex-a76) part=0xd0b features="fp asimd evtstrm crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp" ;;
  *) echo "cpuinfo.sh: give the core: cortex-a53, cortex-a72 or cortex-a76" >&2; exit 2 ;;
esac
for i in $(seq 0 $(( $(nproc) - 1 ))); do
  printf 'processor\t: %s\nBogoMIPS\t: 108.00\nFeatures\t: %s\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: %s\nCPU revision\t: 3\n\n' \
    "$i" "$features" "$part"
done
