# Sourced by the scripts that run on a lent CUDA machine (no network there): installs the
# carried wheels, points Python at them and at the source tree, and records the GPU.
#
#   source benchmarks/gpu_setup.sh CARRY OUT
#
# CARRY/whl holds wheels of what the machine lacks, CARRY/site packages unpacked by hand
# (blingfire, without its 90 MB of unused tokenizer models); OUT/gpu.txt names the GPU.
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$1"/whl/*.whl
export PYTHONPATH="src:$site:$1/site" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv | tee "$2/gpu.txt"
