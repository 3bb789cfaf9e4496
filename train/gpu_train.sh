#!/usr/bin/env bash
# One training run spread over several calls of the device tool (each at most 10 minutes; a process
# started with setsid outlives the call while the machine stays warm, i.e. the next call follows within
# its idle window). Run from the repository root on the GPU machine, with the compact data carried:
#
#   bash train/gpu_train.sh start 530   # first call: starts train.py in the background, waits 530 s
#   bash train/gpu_train.sh wait 560    # later calls: wait up to 560 s (returns early when it ends)
#
# Each call copies the log, the CSV and a checkpoint without optimizer state (best-slim.pt, what
# eval_decoding.py and export_onnx.py need) to $OUT, so a lost machine loses at most one call.
# The training settings are those of models/hwr-htr-v3 (train/README.md).
set -u
RUN=/tmp/hwr-v3
mode=${1:-wait}
budget=${2:-540}
t0=$(date +%s)
if [ "$mode" = start ]; then
  mkdir -p $RUN
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
  nproc
  PYTHONUNBUFFERED=1 setsid nohup python3 train/train.py --dataset .cache-gpu/htr40 --run $RUN \
    --channels 32,64,128,128,192 --hidden 256 --temporal-layers 3 --recurrent-layers 2 --recurrent-hidden 192 \
    --dropout 0.25 --width-stride 2 --lr 1.5e-3 --max-batch 48 --batch-width 36000 \
    --epochs 400 --max-minutes "${MAX_MINUTES:-25}" --anneal-by-deadline --checkpoint-minutes 3 \
    --workers 14 --amp bf16 --threads 4 > $RUN/train.log 2>&1 < /dev/null &
  echo $! > $RUN/pid
fi
pid=$(cat $RUN/pid 2>/dev/null || echo 0)
while kill -0 "$pid" 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt "$budget" ]; do
  sleep 10
done
if kill -0 "$pid" 2>/dev/null; then echo "still training (pid $pid)"; else echo "training process has ended"; fi
grep -v "^epoch [0-9]* batch" $RUN/train.log | tail -n 40
tail -n 3 $RUN/train.log
cp $RUN/train.log $RUN/log.csv "$OUT"/ 2>/dev/null
if [ -f $RUN/best.pt ]; then
  python3 - "$RUN/best.pt" "$OUT/best-slim.pt" <<'EOF'
import sys, torch
state = torch.load(sys.argv[1], map_location="cpu", weights_only=False)
state.pop("optimizer", None)
torch.save(state, sys.argv[2])
print("best-slim.pt: epoch", state.get("epochs_done"), "val CER", state.get("val_cer"))
EOF
fi
ls -la "$OUT"
