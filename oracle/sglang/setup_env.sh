#!/usr/bin/env bash
# Build the CPU environment in which SGLang's own argument resolution and KV-cache sizing run
# (see sizing.py).
#   bash oracle/sglang/setup_env.sh [RELEASE=0.5.23] [ENV_DIR=$KVLEDGER_ORACLE_HOME/sglang-RELEASE]
# The engine wheel goes in with --no-deps; only the modules its sizing path imports are added.
# torch stays the 2.13.0 CPU build: every pip call runs under a torch==2.13.0 constraint, so a
# dependency can never pull a CUDA torch. Downloads are cached in $KVLEDGER_ORACLE_HOME/dl, and an
# environment that already imports the wanted release is left as it is (a rerun costs seconds).
set -euo pipefail
REL=${1:-0.5.23}
HOME_DIR=${KVLEDGER_ORACLE_HOME:-$HOME/.cache/kvledger-oracle}
ENV_DIR=${2:-$HOME_DIR/sglang-$REL}
DL=$HOME_DIR/dl
PY=${PYTHON:-python3}
mkdir -p "$DL"
if [ -x "$ENV_DIR/bin/python" ] && "$ENV_DIR/bin/python" -c \
    "import importlib.metadata as m, sys; sys.exit(m.version('sglang') != '$REL')" 2>/dev/null; then
  echo "sglang $REL environment ready: $ENV_DIR"; exit 0
fi
echo "torch==2.13.0" > "$DL/constraints.txt"
export PIP_CONSTRAINT="$DL/constraints.txt" PIP_DISABLE_PIP_VERSION_CHECK=1
ls "$DL"/sglang-"$REL"-*.whl >/dev/null 2>&1 || "$PY" -m pip download -q --no-deps -d "$DL" "sglang==$REL"
WHL=$(ls "$DL"/sglang-"$REL"-*.whl | head -1)
"$PY" -m venv "$ENV_DIR"
P="$ENV_DIR/bin/pip"
"$P" install -q "torch==2.13.0"
"$P" install -q --no-deps "$WHL"
# The versions the release pins in its wheel's METADATA for the packages its config path reads
# (transformers parses config.json; the others are imported at module level).
PINS=$("$ENV_DIR/bin/python" - "$WHL" <<'PY'
import re, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
text = z.read(meta).decode()
want = ("transformers", "openai", "xgrammar", "apache-tvm-ffi", "sentencepiece", "triton",
        "compressed-tensors")
pins = re.findall(r"^Requires-Dist: ((?:%s)==[^\s;,]+)" % "|".join(want), text, re.M)
print(" ".join(sorted(set(pins))))
PY
)
echo "pins from the wheel: $PINS"
# triton and compressed-tensors go in without their dependencies (they would pull CUDA wheels).
NODEPS=$(echo "$PINS" | tr ' ' '\n' | grep -E '^(triton|compressed-tensors)==' | tr '\n' ' ' || true)
DEPS=$(echo "$PINS" | tr ' ' '\n' | grep -vE '^(triton|compressed-tensors)==' | tr '\n' ' ' || true)
[ -n "$NODEPS" ] && "$P" install -q --no-deps $NODEPS
# SGLang's import closure for ServerArgs and the mem_cache configurator (found by importing the
# modules sizing.py loads until no ModuleNotFoundError remained).
"$P" install -q numpy orjson psutil pybase64 requests packaging pillow starlette msgspec \
    pydantic pyzmq tqdm IPython aiohttp dill gguf partial_json_parser loguru $DEPS
"$ENV_DIR/bin/python" -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
"$ENV_DIR/bin/python" -c "import importlib.metadata as m; print('sglang', m.version('sglang'))"
echo "sglang $REL environment ready: $ENV_DIR"
