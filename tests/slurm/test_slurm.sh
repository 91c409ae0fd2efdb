#!/usr/bin/env bash
# tests/slurm/test_slurm.sh - `lenx slurm` against a real Slurm on this machine
# (docs/cluster.md#the-real-slurm-test; `make test-slurm`).
#
# Installs Debian's slurm-wlm and munge when missing, starts munged, slurmctld
# and slurmd as background processes (no systemd) on a one-node cluster named
# after `hostname -s` with this machine's CPUs and memory, all state under a
# temp dir; writes tests/shard.yaml's sweep as a 3-shard array job with `lenx
# slurm`, submits it, waits (at most LENX_SLURM_WAIT seconds, default 600),
# shows squeue / scontrol / sacct lines, and checks that the merged store
# equals a single-machine run of the same sweep value for value (metrics,
# series and outputs compared exactly in SQL, and `lenx compare --rtol 0
# --atol 0`). Every daemon it started is stopped on exit. It needs root (the
# daemons run as SlurmUser=root) and fails loudly when Slurm cannot start.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
lenx=${LENX_BIN:-$root/lenx}
wait_s=${LENX_SLURM_WAIT:-600}
t0=$(date +%s)
say() { echo "test-slurm: $*"; }
die() { echo "test-slurm: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root: the test daemons run as SlurmUser=root"
[ -x "$lenx" ] || die "no lenx binary at $lenx (run make first)"
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    say "installing slurm-wlm and munge (apt)"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends \
        slurm-wlm munge >/dev/null || die "apt-get install slurm-wlm munge failed"
fi

tmp=$(mktemp -d /tmp/lenx-slurm-XXXXXX)
pids=()
cleanup() {
    local rc=$?
    if [ -n "${SLURM_CONF:-}" ] && [ -n "${jobs_started:-}" ]; then
        scancel $jobs_started 2>/dev/null || true
    fi
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
    done
    if [ "$rc" -ne 0 ]; then
        for f in "$tmp"/log/*.log; do [ -f "$f" ] && { echo "--- $f (last 15 lines)"; tail -15 "$f"; }; done >&2
    fi
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP     # so that a timeout still runs cleanup
mkdir -p "$tmp"/{munge,state,spool,log,out,single}
chmod 700 "$tmp/munge"

# munge: our own key and socket.
mungekey --create --keyfile="$tmp/munge/munge.key" --force 2>/dev/null ||
    dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$tmp/munge/munge.key"
munged --foreground --force --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.socket" \
    --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/log/munged.log" --seed-file="$tmp/munge/seed" \
    >"$tmp/log/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$tmp/munge/munge.socket" ] && break; sleep 0.1; done
[ -S "$tmp/munge/munge.socket" ] || die "munged did not start: $(cat "$tmp/log/munged.out" "$tmp/log/munged.log" 2>/dev/null)"

# slurm.conf: one node, this machine's CPUs and memory as slurmd sees them.
host=$(hostname -s)
node=$(slurmd -C | head -1)
cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node")
mem=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
port=$((17000 + RANDOM % 2000))
export SLURM_CONF=$tmp/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=lenxtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/munge.socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$tmp/log/jobcomp.txt
MpiDefault=none
ReturnToService=2
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i -f "$SLURM_CONF" >"$tmp/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" >"$tmp/log/slurmd.out" 2>&1 &
pids+=($!)
state=
for _ in $(seq 120); do
    state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
    [ "$state" = idle ] && break
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || die "a daemon exited (pid $p): $(cat "$tmp"/log/*.out)"; done
    sleep 0.5
done
[ "$state" = idle ] || die "node $host is not idle after 60 s (state '$state')"
say "slurm is up: $(sinfo -h -o '%P %a %D %T %c cpus %m MB' | head -1) (ctld port $port, $(($(date +%s) - t0)) s)"

# The sweep as a 3-shard array job, submitted with its own submit script.
cd "$root"
"$lenx" slurm tests/shard.yaml --shards 3 --db "$tmp/out/lenx.db" --partition debug --time 10:00 \
    --cpus 1 --mem 1G
dir=$tmp/out/shard.slurm
grep -q -- '--array=0-2' "$dir/cells.sbatch" || die "cells.sbatch has no --array=0-2"
grep -q -- '--array=0-2' "$dir/models.sbatch" || die "models.sbatch has no --array=0-2 (4 models, 3 shards)"
submit=$(sh "$dir/submit.sh")
echo "$submit"
read -r _ models cells merge < <(grep '^JOBS ' <<<"$submit")
jobs_started="$models $cells $merge"
say "waiting for jobs $models (array), $cells (array), $merge"
shown=0
until [ -z "$(squeue -h -j "$models,$cells,$merge" 2>/dev/null)" ]; do
    if [ "$shown" -eq 0 ] && squeue -h -j "$cells" -t R 2>/dev/null | grep -q .; then
        squeue -j "$models,$cells,$merge" -o '%.12i %.22j %.8T %.10M %R'
        shown=1
    fi
    [ $(($(date +%s) - t0)) -lt "$wait_s" ] || die "jobs still queued after $wait_s s: $(squeue)"
    sleep 1
done
say "squeue is empty; what the jobs did:"
for j in "$models" "$cells" "$merge"; do
    scontrol show job "$j" 2>/dev/null | grep -o 'JobId=[0-9]* \(ArrayJobId=[0-9]* ArrayTaskId=[0-9]* \)\?JobName=[^ ]*\|JobState=[A-Z_]* Reason=[^ ]*\|ExitCode=[0-9:]*' |
        paste -sd' ' | sed 's/ \(JobId=\)/\n\1/g'
done | tee "$tmp/states.txt"
echo "sacct:"
sacct -j "$models,$cells,$merge" -o JobID,JobName,State,ExitCode 2>&1 | head -10 || true
echo "jobcomp/filetxt record:"
sed 's/ \(UserId\|GroupId\|Partition\|TimeLimit\|NodeList\|NodeCnt\|ProcCnt\|WorkDir\|ReservationName\|Tres\|Account\|QOS\|WcKey\|Cluster\|SubmitTime\|EligibleTime\|DerivedExitCode\)=[^ ]*//g' \
    "$tmp/log/jobcomp.txt" || true
for f in "$dir"/logs/*.out; do echo "--- $(basename "$f")"; tail -3 "$f"; done
n_done=$(grep -c 'JobState=COMPLETED' "$tmp/states.txt" || true)
[ "$n_done" -eq 7 ] || die "expected 7 COMPLETED jobs (3 models tasks, 3 cell tasks, the merge), saw $n_done"

# The same sweep on one machine, then the two stores value for value.
OMP_NUM_THREADS=1 "$lenx" run tests/shard.yaml --db "$tmp/single/lenx.db" --threads 1 --quiet --no-table
"$lenx" table --db "$tmp/single/lenx.db" --sweep shard --format csv >"$tmp/single.csv"
"$lenx" compare "$tmp/single.csv" shard --db "$tmp/out/lenx.db" --rtol 0 --atol 0 | tail -1 ||
    die "lenx compare: the merged store differs from the single-machine run"
diff_sql() {
    sqlite3 "$tmp/out/lenx.db" "ATTACH '$tmp/single/lenx.db' AS s;
        SELECT count(*) FROM (SELECT r.key, $2 FROM main.runs r JOIN main.$1 c ON c.run_id = r.id
                              EXCEPT SELECT r.key, $2 FROM s.runs r JOIN s.$1 c ON c.run_id = r.id);
        SELECT count(*) FROM (SELECT r.key, $2 FROM s.runs r JOIN s.$1 c ON c.run_id = r.id
                              EXCEPT SELECT r.key, $2 FROM main.runs r JOIN main.$1 c ON c.run_id = r.id);
        SELECT count(*) FROM main.$1; SELECT count(*) FROM s.$1;" | paste -sd' '
}
for t in "metrics:c.name, c.value" "series:c.series, c.x, c.y" \
         "outputs:c.sample, c.depth, c.gold, c.text, c.score, c.logprob, c.stop"; do
    read -r a b n m < <(diff_sql "${t%%:*}" "${t#*:}")
    say "${t%%:*}: $n rows merged, $m single; $a only merged, $b only single"
    [ "$a" -eq 0 ] && [ "$b" -eq 0 ] && [ "$n" -eq "$m" ] || die "${t%%:*} differ"
done
n_runs=$(sqlite3 "$tmp/out/lenx.db" "SELECT count(*) FROM runs WHERE status = 'ok'")
n_models=$(sqlite3 "$tmp/out/lenx.db" "SELECT count(*) FROM models WHERE steps > 0")
[ "$n_runs" -eq 24 ] || die "expected 24 ok cells in the merged store, saw $n_runs"
say "ok: 24 cells bit-identical to the single-machine run, $n_models models trained once; $(($(date +%s) - t0)) s"

# A time limit hit for real (LENX_SLURM_TIMELIMIT=0 skips it): tests/slurm/timelimit.yaml trains one
# model for about 160 s under a 2-minute --time, with USR1 asked 30 s before the limit (Slurm sends
# it up to 60 s early) and the training state saved every 3 s. The models task must be requeued at
# least once and resume; its model must be byte for byte the one an uninterrupted run on this
# machine trains at the same time, and the cells the same values. About 3 minutes. Slurm signals
# 60-90 s into the job here; the training outlasts that on a CPU up to 1.75 times this one's speed.
[ "${LENX_SLURM_TIMELIMIT:-1}" = 0 ] && exit 0
t1=$(date +%s)
tl=$tmp/timelimit
mkdir -p "$tl/single"
"$lenx" slurm tests/slurm/timelimit.yaml --shards 1 --db "$tl/lenx.db" --partition debug --time 2 --cpus 1 \
    --mem 1G --requeue-before 30 --save-every 3 >/dev/null
tdir=$tl/timelimit.slurm
grep -q -- '--signal=B:USR1@30' "$tdir/models.sbatch" || die "models.sbatch does not ask for USR1 30 s early"
submit=$(sh "$tdir/submit.sh")
read -r _ models cells merge < <(grep '^JOBS ' <<<"$submit")
jobs_started="$models $cells $merge"
say "time limit: jobs $models (models, --time 2), $cells, $merge; an uninterrupted run beside them"
OMP_NUM_THREADS=1 "$lenx" run tests/slurm/timelimit.yaml --db "$tl/single/lenx.db" --threads 1 --quiet \
    --no-table &
single=$!
restarts=0
until [ -z "$(squeue -h -j "$models,$cells,$merge" 2>/dev/null)" ]; do
    r=$(scontrol show job "$models" 2>/dev/null | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p' | head -1)
    if [ -n "$r" ] && [ "$r" -gt "$restarts" ]; then
        restarts=$r
        say "time limit: the models task requeued ($r) at $(($(date +%s) - t1)) s: $(squeue -h -j "$models" -o '%T %r')"
        # Slurm holds a requeued job about two minutes (Reason BeginTime): start it in 5 s instead,
        # which changes nothing the scripts do, only how long the test waits. Not at once: slurmd may
        # still be ending the killed instance, and then refuses the new one ("Job credential revoked",
        # "already killed, do not launch batch job": the job fails without running; seen once in CI)
        scontrol update JobId="$models" StartTime=now+5 2>/dev/null || true
    fi
    [ $(($(date +%s) - t1)) -lt "$wait_s" ] || die "time limit: jobs still queued after $wait_s s: $(squeue)"
    sleep 1
done
wait "$single" || die "the uninterrupted run failed"
for j in "$models" "$cells" "$merge"; do
    scontrol show job "$j" 2>/dev/null | grep -o 'JobId=[0-9]*\|JobState=[A-Z_]*\|Restarts=[0-9]*\|ExitCode=[0-9:]*' |
        paste -sd' '
done | tee "$tl/states.txt"
log=$(ls "$tdir"/logs/*models*.out | head -1)
grep 'resuming model' "$log" || die "time limit: the models task never resumed (log $log: $(tail -5 "$log"))"
r=$(grep -o 'Restarts=[0-9]*' "$tl/states.txt" | head -1 | cut -d= -f2)
[ "${r:-0}" -ge 1 ] || die "time limit: the models task was never requeued (Restarts=${r:-?}): train longer"
[ "$(grep -c 'JobState=COMPLETED' "$tl/states.txt")" -eq 3 ] || die "time limit: not every job completed"
a=$(ls "$tl"/models/*.safetensors | grep -v state) b=$(ls "$tl"/single/models/*.safetensors | grep -v state)
cmp "$a" "$b" || die "time limit: the requeued run's model differs from the uninterrupted one"
"$lenx" table --db "$tl/single/lenx.db" --sweep timelimit --format csv >"$tl/single.csv"
"$lenx" compare "$tl/single.csv" timelimit --db "$tl/lenx.db" --rtol 0 --atol 0 | tail -1 ||
    die "time limit: the cells differ from the uninterrupted run's"
say "ok: requeued $r time(s) at its time limit, resumed, and trained the uninterrupted run's model byte for byte; $(($(date +%s) - t1)) s"
