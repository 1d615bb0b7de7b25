"""Convert CrossNER's AI test set (CoNLL, one token and its BIO tag a line) into
crossner-ai-test.jsonl: one sentence a line, {"id", "text", "entities": [[type, surface], ...],
"ignore": [surface, ...]}, CrossNER's types mapped onto memoryd's. person and researcher ->
person; organisation, university, product and programlang -> system; country and location ->
place; conference and misc -> other. algorithm, field, task and metrics name concepts ("naive
Bayes classifier", "machine learning"), which memoryd does not extract: they go to "ignore",
and the benchmark neither counts them nor counts a prediction of one as wrong.

The text is the tokens joined with single spaces, then lightly detokenized the way Wikipedia
wrote them (CrossNER splits plurals: "classifier s" -> "classifiers"), as for WNUT-17
(convert_wnut17: detokenize, and the same CoNLL reading). CROSSNER is a checkout of
github.com/zliucr/CrossNER:

    cd bench/data/entities && git -C CROSSNER show 2e7ba2a:ner_data/ai/test.txt \
        | python convert_crossner.py > crossner-ai-test.jsonl

The typer's training data (bench/train_typer.py) is the train and dev files of all five domains
(never ai/test.txt), every type mapped (TRAIN_TYPES):

    for d in ai literature music politics science; do for s in train dev; do
        git -C CROSSNER show 2e7ba2a:ner_data/$d/$s.txt | python convert_crossner.py --train $d-$s-
    done; done | gzip -n > train/crossner-train.jsonl.gz
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from convert_wnut17 import detokenize, sentences, spans

TYPES = {
    "person": "person",
    "researcher": "person",
    "organisation": "system",
    "university": "system",
    "product": "system",
    "programlang": "system",
    "country": "place",
    "location": "place",
    "conference": "other",
    "misc": "other",
    "algorithm": "",
    "field": "",
    "task": "",
    "metrics": "",
}


# The other domains' types, for the typer's training data (`--train`): people -> person,
# organisations of every kind (parties, bands, journals, magazines) -> system, as WikiGold's ORG;
# events, awards and works -> other; concepts -> ignore.
TRAIN_TYPES = {
    **TYPES,
    **dict.fromkeys(("politician", "scientist", "musicalartist", "writer"), "person"),
    **dict.fromkeys(("politicalparty", "band", "academicjournal", "magazine"), "system"),
    **dict.fromkeys(("election", "event", "award", "album", "song", "book", "poem"), "other"),
    **dict.fromkeys(
        (
            "astronomicalobject", "chemicalcompound", "chemicalelement", "protein", "enzyme",
            "discipline", "theory", "musicgenre", "literarygenre", "musicalinstrument",
        ),
        "",
    ),
}  # fmt: skip


def main() -> None:
    train = sys.argv[1:2] == ["--train"]
    prefix = sys.argv[2] if train and len(sys.argv) > 2 else ""
    for i, sent in enumerate(sentences(sys.stdin)):
        found = spans(sent, TRAIN_TYPES if train else TYPES)
        text = " ".join(token for token, _ in sent)
        text = detokenize(re.sub(r"(?<=\w) s(?=\s|$)", "s", text))
        row = {
            "id": f"{prefix}{i}" if prefix else i,
            "text": re.sub(r"\( (?=\S)", "(", text),
            "entities": [s for s in found if s[0]],
            "ignore": [s[1] for s in found if not s[0]],
        }
        print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
