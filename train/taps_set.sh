# taps_set NAME PARTS FILES...: the features of gen outputs FILES from the C engine (the forward the
# drafts are fed by at run time) into $W/NAME_feats.npy, with the target's top-32 next tokens after
# every row (NAME_topk_ids.npy / _topk_logp.npy); PARTS single-thread processes over consecutive
# slices, joined afterwards. Skipped when NAME_feats.npy exists. Sourced by make_drafts.sh and
# schema_data.sh, which set W, T, PY, NICE, TAPS (empty: z-lab's rule) and log.
taps_set() {  # name parts files...
    local name=$1 parts=$2
    shift 2
    [ -f "$W/${name}_feats.npy" ] && return 0
    local layers
    layers=$($NICE $PY train/draft_data.py seqs "$name" --parts "$parts" ${TAPS:+--taps "$TAPS"} "$@" 2>>"$W/pipeline.log")
    local t0 k pre
    t0=$(date +%s)
    for ((k = 0; k < parts; k++)); do
        pre="$W/${name}"; [ "$parts" -gt 1 ] && pre="$W/${name}_p$k"
        $NICE ./pocketflash taps -m "$T" --layers "${TAPS:-$layers}" -i "${pre}_seqs.bin" -o "${pre}_feats.npy" -t 1 \
            --topk 32 --topk-out "${pre}_topk" 2>>"$W/taps_${name}_$k.log" &
    done
    wait
    [ "$parts" -gt 1 ] && $NICE $PY train/draft_data.py joinfeats "$name" "$parts" --suffix feats topk_ids topk_logp \
        2>>"$W/pipeline.log"
    log "taps $name: $(( $(date +%s) - t0 )) s"
}
