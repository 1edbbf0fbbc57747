#!/usr/bin/env bash
# Gives one CPU to a benchmark's frame thread: moves every other thread of the
# machine that may move, and every interrupt that may move, to the other CPUs.
# Pair it with `scheduler_bench --frame-cpu N`, which puts the bench's frame
# thread on CPU N and its own other threads elsewhere.
#
#   sudo bash scripts/quiet-core.sh N          # before the bench
#   sudo bash scripts/quiet-core.sh --restore  # after it: every CPU for all
#
# Needs root. Per-CPU kernel threads and the local timer cannot move; they stay.
# It changes the whole machine until --restore, so it is for bench runs only,
# never for CI or tests.
set -euo pipefail

cpus=$(nproc --all)
last=$((cpus - 1))
all="0-$last"

if [[ "${1:-}" == "--restore" ]]; then
  others="$all"
elif [[ "${1:-}" =~ ^[0-9]+$ ]] && (( $1 < cpus )) && (( cpus > 1 )); then
  quiet=$1
  others=$(seq 0 "$last" | grep -vx "$quiet" | paste -sd, -)
else
  echo "usage: $0 CPU | --restore   (CPU below $cpus, on a machine with 2 or more)" >&2
  exit 2
fi

moved_irqs=0
for irq in /proc/irq/[0-9]*; do
  # Some interrupts are fixed to a CPU; writing theirs fails, and they stay.
  if echo "$others" > "$irq/smp_affinity_list" 2>/dev/null; then
    moved_irqs=$((moved_irqs + 1))
  fi
done

moved_tasks=0
for task in /proc/[0-9]*/task/[0-9]*; do
  tid=${task##*/}
  # Per-CPU kernel threads refuse; threads that exited meanwhile are gone.
  if taskset -p -c "$others" "$tid" >/dev/null 2>&1; then
    moved_tasks=$((moved_tasks + 1))
  fi
done

echo "interrupts and threads now on CPUs $others: $moved_irqs interrupts, $moved_tasks threads"
