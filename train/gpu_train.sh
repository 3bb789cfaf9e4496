#!/usr/bin/env bash
# One training run spread over several calls of the device tool (each at most 10 minutes; a process
# started with setsid outlives the call while the machine stays warm, i.e. the next call follows within
# its idle window). Run from the repository root on the GPU machine, with the compact data carried:
#
#   RECIPE=finetune-v3 bash train/gpu_train.sh start 540   # first call: starts the recipe in the background, waits 540 s
#   bash train/gpu_train.sh wait 300                       # later calls: wait up to 300 s (returns early when it ends)
#
# Recipes (train/README.md has the device-time plan of each):
#   v3           models/hwr-htr-v3 from scratch (25 minutes of training; needed 30 minutes of device time)
#   finetune-v3  the shipped v3, rebuilt from its rec.onnx (checkpoint_from_onnx.py), trained on at peak LR, cosine to
#                the deadline MAX_MINUTES (fits a 15-minute device budget at 9), one run per arm of ARMS side by side
#                on the one GPU: "real" (the default: the real lines alone, all 14 DataLoader workers) and/or "synth"
#                (plus SYNTH_LINES synthetic lines from synth_lines.py and the carried fonts). ARMS="real synth" gives
#                both the same minutes, so that their difference is the synthetic lines' doing (on v2 they cost 1.1
#                points: docs/training.md); "more" adds the lines of other public repositories (real_lines.py), carried
#                as the folder more/ inside the staged copy (train/README.md); CONTINUE_MINUTES > 0 then trains on from the first arm's best (on the real lines alone) at peak
#                CONTINUE_LR (1e-4) for that long (folder cont: best-slim-cont.pt, log-cont.csv)
# A copy of the lines larger than one call can carry travels in parts, one call each (train/README.md):
#   bash train/gpu_train.sh split-data /work/cache/compact/h64q75 4      # here: .cache-gpu/stage1..4
#   bash train/gpu_train.sh stage                                         # device calls 1 to 3, carrying stage1 to stage3
#   RECIPE=finetune-v3 bash train/gpu_train.sh start 540                  # call 4, carrying stage4: unpacks, trains on it
# MAX_BATCH, BATCH_WIDTH: the fine-tune's batches (at most this many lines, this many source columns; 48 and 36000 by default)
# RECURRENT_HIDDEN: the fine-tune's LSTM units a direction (v3's 192 by default); more widens the shipped model's head
#   without changing what it computes (widen.py: the new units start with zero weights out), so the run starts at v3
# TIME_LOADER=1: before training, one epoch of batches made without the model (14 workers): the lines a second the supply gives
# DATA: the compact copy (default .cache-gpu/htr32, or the staged copy when parts were carried); FONTS: the folder of carried font files; CHECK_IN: the onnxruntime
# that proves the rebuilt checkpoint (python, the GPU machine's; node here); TRAIN_EXTRA: more
# train.py options, last (they win), e.g. for a smoke test on a CPU:
#   PY=/usr/bin/python3 RUN=/tmp/gpu-smoke RECIPE=finetune-v3 CHECK_IN=node SYNTH_LINES=40 MAX_MINUTES=1 TRAIN_EXTRA="--limit-train 64 --limit-val 16 --workers 2 --threads 2" \
#     bash train/gpu_train.sh run
#
# Each call copies the log, the CSVs and the best checkpoints without optimizer state (best-slim.pt, or
# best-slim-ARM.pt and log-ARM.csv per arm: what eval_decoding.py and export_onnx.py need) to $OUT, so a lost
# machine loses at most one call (`send` below: large files in parts, within the tool's limits).
set -u
RUN=${RUN:-/tmp/hwr-run}
PY=${PY:-python3}
mode=${1:-wait}
budget=${2:-540}
t0=$(date +%s)

recipe_v3() {
  "$PY" train/train.py --dataset "$DATA" --run $RUN \
    --channels 32,64,128,128,192 --hidden 256 --temporal-layers 3 --recurrent-layers 2 --recurrent-hidden 192 \
    --dropout 0.25 --width-stride 2 --lr 1.5e-3 --max-batch 48 --batch-width 36000 \
    --epochs 400 --max-minutes "${MAX_MINUTES:-25}" --anneal-by-deadline --checkpoint-minutes 3 \
    --workers 14 --amp bf16 --threads 4 ${TRAIN_EXTRA:-}
}

train_on() {  # DIR INIT LR MINUTES WORKERS [train.py options]: one run on from the checkpoint INIT, cosine to MINUTES
  local dir=$1 init=$2 lr=$3 minutes=$4 workers=$5
  shift 5
  mkdir -p $RUN/$dir
  "$PY" train/train.py --dataset "$DATA" --cache /tmp/cache --run $RUN/$dir --init-from "$init" "$@" \
    --recurrent-layers 2 --recurrent-hidden "${RECURRENT_HIDDEN:-192}" --dropout 0.25 --width-stride 2 --lr "$lr" \
    --max-batch "${MAX_BATCH:-48}" --batch-width "${BATCH_WIDTH:-36000}" --epochs 400 --max-minutes "$minutes" --anneal-by-deadline \
    --checkpoint-minutes 3 --workers "$workers" --amp bf16 --threads 2 ${TRAIN_EXTRA:-} > $RUN/$dir/train.log 2>&1
}

finetune_arm() {  # ARM: real (the real lines), synth (plus the synthetic ones) or more (plus the carried copy's more/:
  # real_lines.py's lines of other repositories); WORKERS DataLoader processes
  local arm=$1 workers=$2 extra=(--snapshot-every "${SNAPSHOT_EVERY:-6}")
  [ "$arm" = synth ] && extra+=(--extra-train /tmp/synth)
  [ "$arm" = more ] && extra+=(--extra-train "$DATA/more")
  train_on "$arm" $RUN/init.pt "${LR:-5e-4}" "${MAX_MINUTES:-9}" "$workers" "${extra[@]}"
}

recipe_finetune_v3() {
  "$PY" train/checkpoint_from_onnx.py --model models/hwr-htr-v3 --out $RUN/init.pt --dataset "$DATA" --cache /tmp/cache \
    --check-in "${CHECK_IN:-python}" --threads 8 || return 1
  # TIME_LOADER=1: first one epoch of batches without the model, with the training's 14 workers (about 20 s; docs/training.md, "v3.3")
  if [ "${TIME_LOADER:-0}" = 1 ]; then
    train_on loader $RUN/init.pt 0 1 14 --time-loader && grep "^loader:" $RUN/loader/train.log
    rm -rf $RUN/loader  # not an arm: nothing of it goes back but that line, in train.log
  fi
  local arms=(${ARMS:-real})
  case " ${arms[*]} " in *" synth "*)
    "$PY" train/synth_lines.py --dataset "$DATA" --out /tmp/synth --lines "${SYNTH_LINES:-8000}" --fonts "$FONTS"/* --workers 14 || return 1
  esac
  # the arms share the GPU and the 16 cores (the batches are made and augmented on the CPU), side by side
  local pids=() arm
  for arm in "${arms[@]}"; do
    finetune_arm "$arm" $(( 14 / ${#arms[@]} )) &
    pids+=($!)
  done
  local failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  for arm in "${arms[@]}"; do echo "== $arm"; grep -v "^epoch [0-9]* batch" $RUN/$arm/train.log | tail -n 30; done
  [ $failed = 0 ] || return 1
  # a warm restart from the first arm's best, on the real lines alone, at a lower peak (CONTINUE_LR, cosine over CONTINUE_MINUTES): in 2026-11-26's
  # two runs it gained again on the original lines (docs/training.md, "v3.2")
  if [ "${CONTINUE_MINUTES:-0}" != 0 ] && [ -f "$RUN/${arms[0]}/best.pt" ]; then
    train_on cont "$RUN/${arms[0]}/best.pt" "${CONTINUE_LR:-1e-4}" "$CONTINUE_MINUTES" 14 || return 1
    echo "== cont"; grep -v "^epoch [0-9]* batch" $RUN/cont/train.log | tail -n 12
  fi
}

# A data copy too large for one call travels in parts (split-data, here), one per call, each in its own carried folder
# .cache-gpu/stageK: every call gathers the parts it carries in /tmp/stage (`stage`, or `start` before it starts),
# and `start` unpacks the whole copy into /tmp/staged-data, checked against the digest, and trains on it.
if [ "$mode" = split-data ]; then  # here: bash train/gpu_train.sh split-data COPY PARTS
  src=$2 parts=${3:-2}
  rm -rf .cache-gpu/stage[0-9]*
  tar -C "$src" -cf /tmp/staged-data.tar . || exit 1
  digest=$(sha256sum /tmp/staged-data.tar | cut -d' ' -f1)
  split -n "$parts" -d -a 2 /tmp/staged-data.tar /tmp/staged-data.tar.part
  for k in $(seq 1 "$parts"); do
    mkdir -p .cache-gpu/stage$k
    mv /tmp/staged-data.tar.part$(printf %02d $((k - 1))) .cache-gpu/stage$k/
    echo "$digest $parts" > .cache-gpu/stage$k/digest
  done
  rm -f /tmp/staged-data.tar
  du -sh .cache-gpu/stage*
  exit 0
fi
gather_parts() {  # the parts this call carries, into /tmp/stage; says which of how many are there
  local dir found=0
  mkdir -p /tmp/stage
  for dir in .cache-gpu/stage[0-9]*; do
    [ -f "$dir/digest" ] || continue
    cp "$dir"/staged-data.tar.part* "$dir/digest" /tmp/stage/ && found=1
  done
  [ $found = 1 ] || [ -f /tmp/stage/digest ] || return 0
  echo "staged parts: $(ls /tmp/stage | grep -c part) of $(cut -d' ' -f2 /tmp/stage/digest)"
}
unpack_parts() {  # all parts gathered: the copy in /tmp/staged-data (once)
  [ -f /tmp/staged-data/.complete ] && return 0
  local digest parts
  read -r digest parts < /tmp/stage/digest
  if [ "$(ls /tmp/stage | grep -c part)" != "$parts" ]; then echo "missing staged parts: run the stage calls first"; return 1; fi
  if [ "$(cat /tmp/stage/staged-data.tar.part* | sha256sum | cut -d' ' -f1)" != "$digest" ]; then echo "staged parts do not match their digest"; return 1; fi
  rm -rf /tmp/staged-data && mkdir -p /tmp/staged-data
  cat /tmp/stage/staged-data.tar.part* | tar -C /tmp/staged-data -xf - && touch /tmp/staged-data/.complete
}
if [ "$mode" = stage ]; then
  gather_parts
  exit 0
fi

if [ "$mode" = run ]; then  # what `start` runs in its own session
  DATA=${DATA:-.cache-gpu/htr32}
  FONTS=${FONTS:-.cache-gpu/fonts}
  case "${RECIPE:-finetune-v3}" in
    v3) recipe_v3 ;;
    finetune-v3) recipe_finetune_v3 ;;
    *) echo "unknown RECIPE ${RECIPE}" ; exit 2 ;;
  esac
  exit $?
fi
if [ "$mode" = start ]; then
  gather_parts
  if [ -f /tmp/stage/digest ]; then
    unpack_parts || exit 1
    export DATA=/tmp/staged-data
  fi
  mkdir -p $RUN
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
  nproc
  echo "recipe ${RECIPE:-finetune-v3}, data ${DATA:-.cache-gpu/htr32}"
  PYTHONUNBUFFERED=1 setsid nohup bash train/gpu_train.sh run > $RUN/train.log 2>&1 < /dev/null &
  echo $! > $RUN/pid
fi
pid=$(cat $RUN/pid 2>/dev/null || echo 0)
while kill -0 "$pid" 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt "$budget" ]; do
  sleep 10
done
if kill -0 "$pid" 2>/dev/null; then echo "still training (pid $pid)"; else echo "training process has ended"; fi
grep -v "^epoch [0-9]* batch" $RUN/train.log | grep -v "^onnxruntime-node\|^case " | tail -n 60
for log in $RUN/*/train.log; do [ -f "$log" ] && echo "-- $log" && tail -n 2 "$log"; done
slim() {  # best.pt without its optimizer state: what eval_decoding.py and export_onnx.py need
  [ -f "$1" ] || return 0
  "$PY" - "$1" "$2" <<'EOF'
import sys, torch
state = torch.load(sys.argv[1], map_location="cpu", weights_only=False)
state.pop("optimizer", None)
torch.save(state, sys.argv[2])
print(sys.argv[2], "epoch", state.get("epochs_done"), "val CER", state.get("val_cer"))
EOF
}
# A call brings back at most 8 files of 16 MiB each, 64 MiB in all (the device tool's limits): a file over 15 MiB (a
# checkpoint of a head wider than v3's) goes in parts, NAME.part0, NAME.part1 ... (here: cat NAME.part? > NAME), and
# what would pass the limits stays behind, said in the output. Logs first, then the bests, then the newest snapshots.
sent_files=0 sent_bytes=0 part_bytes=$((15 * 1048576))
send() {  # FILE NAME
  [ -f "$1" ] || return 0
  local size parts
  size=$(stat -c %s "$1")
  parts=$(( (size + part_bytes - 1) / part_bytes ))
  [ "$parts" -ge 1 ] || parts=1
  if [ $((sent_files + parts)) -gt 8 ] || [ $((sent_bytes + size)) -gt $((62 * 1048576)) ]; then
    echo "not sent (a call's limits): $2"
    return 0
  fi
  if [ "$parts" = 1 ]; then cp "$1" "$OUT/$2"; else split -b $part_bytes -d -a 1 "$1" "$OUT/$2.part"; fi
  sent_files=$((sent_files + parts)) sent_bytes=$((sent_bytes + size))
}
send $RUN/train.log train.log
send $RUN/log.csv log.csv  # a one-run recipe (v3)
slim $RUN/best.pt $RUN/best-slim.pt && send $RUN/best-slim.pt best-slim.pt
arms=()
for dir in $RUN/*/; do [ -f "$dir/log.csv" ] && arms+=("$(basename "$dir")"); done  # the arms of finetune-v3, and cont
for arm in "${arms[@]}"; do send "$RUN/$arm/log.csv" "log-$arm.csv"; done
for arm in "${arms[@]}"; do slim "$RUN/$arm/best.pt" "$RUN/$arm/best-slim.pt" && send "$RUN/$arm/best-slim.pt" "best-slim-$arm.pt"; done
# the last snapshots (train.py --snapshot-every), for the mean of checkpoints here (average_checkpoints.py), newest first
for arm in "${arms[@]}"; do
  for snap in $(ls -r "$RUN/$arm"/snapshot-*.pt 2>/dev/null | head -n 3); do send "$snap" "$arm-$(basename "$snap")"; done
done
ls -la "$OUT"
