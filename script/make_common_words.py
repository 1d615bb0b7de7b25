"""Generate memoryd/data/common-words-en.txt.gz, the words typo correction never rewrites.

Run once, by hand, where wordfreq and the Debian word lists are installed (neither is a
dependency of memoryd):

    python -m venv /tmp/wf && /tmp/wf/bin/pip install wordfreq==3.1.1
    apt-get install wamerican wbritish        # SCOWL word lists in /usr/share/dict
    /tmp/wf/bin/python script/make_common_words.py

The list: the TOP most frequent English words of wordfreq (its 'best' English list), kept when
they are 4 to 40 letters a-z (typo correction leaves shorter words alone) and spelled as in the
SCOWL American or British dictionary (any case), which drops the frequent misspellings a
frequency list picks up from the web (recieve, definately, seperate). Sorted, one per line,
gzipped with a fixed mtime so the output is reproducible.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import wordfreq

TOP = 50_000
DICTIONARIES = ["/usr/share/dict/american-english", "/usr/share/dict/british-english"]
OUT = Path(__file__).resolve().parent.parent / "memoryd" / "data" / "common-words-en.txt.gz"
WORD = re.compile(r"[a-z]{4,40}")


def main() -> None:
    spelled: set[str] = set()
    for path in DICTIONARIES:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if re.fullmatch(r"[A-Za-z]+", line.strip()):
                spelled.add(line.strip().lower())
    words = sorted(w for w in wordfreq.top_n_list("en", TOP) if WORD.fullmatch(w) and w in spelled)
    data = ("\n".join(words) + "\n").encode("ascii")
    OUT.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{OUT}: {len(words)} words, {len(data)} bytes, {OUT.stat().st_size} gzipped")


if __name__ == "__main__":
    main()
