#!/bin/sh
# The layering of docs/architecture.md: each folder may include its own headers and those of the
# folders listed after it, never one listed before it, and only api/ and the folders above it include
# the public header. Exits 1 and names every include that breaks it.
LAYERS="cli eval convert api verify draft engine grammar kernels formats"
cd "$(dirname "$0")/.." || exit 2
rank() {
    i=0
    for l in $LAYERS; do
        [ "$l" = "$1" ] && { echo $i; return; }
        i=$((i + 1))
    done
    echo -1
}
bad=0
for dir in $LAYERS; do
    from=$(rank "$dir")
    for f in $(find "$dir" -name '*.[ch]' -not -path '*/train/*' 2>/dev/null); do
        for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_0-9]*\)\/.*".*/\1/p' "$f" | sort -u); do
            to=$(rank "$inc")
            if [ "$to" -ge 0 ] && [ "$to" -lt "$from" ]; then
                echo "layer violation: $f includes $inc/ (above $dir/)" >&2
                grep -n "#[[:space:]]*include[[:space:]]*\"$inc/" "$f" | sed "s|^|    $f:|" >&2
                bad=1
            fi
        done
    done
done
# The public header is api/'s and above: the layers below it have their own types (engine/decode.h).
for dir in verify draft engine grammar kernels formats; do
    for f in $(grep -rlE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([a-z_/]*/)?pocketflash\.h[">]' "$dir" \
                   --include='*.[ch]' 2>/dev/null | grep -v '/train/'); do
        echo "layer violation: $f includes the public header pocketflash.h (used by api/ and above only)" >&2
        bad=1
    done
done
[ $bad -eq 0 ] && echo "layers: ok ($LAYERS; pocketflash.h from api/ up)"
exit $bad
