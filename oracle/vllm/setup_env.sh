#!/usr/bin/env bash
# Build the CPU environment in which vLLM's own KV-cache planning runs (see sizing.py).
#   bash oracle/vllm/setup_env.sh [RELEASE=0.33.0] [ENV_DIR=$KVLEDGER_ORACLE_HOME/vllm-RELEASE]
# The engine wheel goes in with --no-deps; only the modules its planning path imports are added.
# torch stays the 2.13.0 CPU build: every pip call runs under a torch==2.13.0 constraint, so a
# dependency can never pull a CUDA torch. Downloads are cached in $KVLEDGER_ORACLE_HOME/dl, and an
# environment that already imports the wanted release is left as it is (a rerun costs seconds).
set -euo pipefail
REL=${1:-0.33.0}
HOME_DIR=${KVLEDGER_ORACLE_HOME:-$HOME/.cache/kvledger-oracle}
ENV_DIR=${2:-$HOME_DIR/vllm-$REL}
DL=$HOME_DIR/dl
PY=${PYTHON:-python3}
mkdir -p "$DL"
if [ -x "$ENV_DIR/bin/python" ] && "$ENV_DIR/bin/python" -c \
    "import importlib.metadata as m, sys; sys.exit(m.version('vllm') != '$REL')" 2>/dev/null; then
  echo "vllm $REL environment ready: $ENV_DIR"; exit 0
fi
echo "torch==2.13.0" > "$DL/constraints.txt"
export PIP_CONSTRAINT="$DL/constraints.txt" PIP_DISABLE_PIP_VERSION_CHECK=1
# vLLM's wheel is about 336 MB; it is fetched once into the download cache.
ls "$DL"/vllm-"$REL"-*.whl >/dev/null 2>&1 || "$PY" -m pip download -q --no-deps -d "$DL" "vllm==$REL"
WHL=$(ls "$DL"/vllm-"$REL"-*.whl | head -1)
"$PY" -m venv "$ENV_DIR"
P="$ENV_DIR/bin/pip"
# torch from the local wheel directory (PIP_FIND_LINKS) or the registry, never a CUDA build.
"$P" install -q "torch==2.13.0"
"$P" install -q --no-deps "$WHL"
# vLLM's import closure for config building and KV-cache planning (found by importing the
# modules sizing.py loads until no ModuleNotFoundError remained).
"$P" install -q numpy packaging psutil pyzmq regex msgspec pydantic cbor2 "transformers==5.19.0" \
    aiohttp requests openai_harmony openai pillow pybase64 cachetools cloudpickle py-cpuinfo \
    prometheus_client "xgrammar==0.2.8" fastapi partial_json_parser "llguidance>=1.7.0,<1.8.0" \
    xxhash einops nvidia-ml-py loguru uvloop
# attention backends import flashinfer; quantised configs import compressed-tensors: the versions
# the release pins in its wheel's METADATA, without their dependencies.
PINS=$("$ENV_DIR/bin/python" - "$WHL" <<'PY'
import re, sys, zipfile
meta = next(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if n.endswith(".dist-info/METADATA"))
text = zipfile.ZipFile(sys.argv[1]).read(meta).decode()
print(" ".join(re.findall(r"^Requires-Dist: ((?:flashinfer-python|compressed-tensors)==[^\s;]+)",
                          text, re.M)))
PY
)
"$P" install -q --no-deps $PINS
"$ENV_DIR/bin/python" -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
"$ENV_DIR/bin/python" -c "import importlib.metadata as m; print('vllm', m.version('vllm'))"
echo "vllm $REL environment ready: $ENV_DIR"
