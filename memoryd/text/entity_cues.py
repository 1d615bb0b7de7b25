"""Word lists and cues for entity extraction (memoryd/text/entities.py): which capitalised words
are never names, and which neighbouring words say person, system or place; and three shipped
lists in memoryd/data (README there: sources and licences): first names (1990 US Census), names
of well-known systems, and countries, regions and large cities. English only, but for the words
that open a sentence in six other languages of the Latin script (sentence-starters.txt);
everything else is typed from where it came.
"""

from __future__ import annotations

import gzip
import importlib.resources
import re
from functools import cache

PERSON = "person"
SYSTEM = "system"
PLACE = "place"
IDENTIFIER = "identifier"
TAG = "tag"
OTHER = "other"
TYPES = (PERSON, SYSTEM, PLACE, IDENTIFIER, TAG, OTHER)


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def phrases(text: str) -> frozenset[str]:
    return frozenset(p.strip() for p in text.split("|"))


def data_lines(name: str) -> list[str]:
    """A shipped list's lines (memoryd/data/NAME), stripped and lower-cased, without blank
    lines and `#` comments."""
    data = importlib.resources.files("memoryd").joinpath("data", name)
    lines = (x.strip().lower() for x in data.read_text(encoding="utf-8").splitlines())
    return [x for x in lines if x and not x.startswith("#")]


@cache
def common_words() -> frozenset[str]:
    """The shipped list of common English words (4+ letters; see memoryd/data/README.md)."""
    data = importlib.resources.files("memoryd").joinpath("data", "common-words-en.txt.gz")
    return frozenset(gzip.decompress(data.read_bytes()).decode("ascii").split())


@cache
def first_names() -> tuple[frozenset[str], frozenset[str]]:
    """The shipped first names (memoryd/data/README.md): (names that are only names, names that
    are English words too: "mark", "june")."""
    data = importlib.resources.files("memoryd").joinpath("data", "first-names-en.txt.gz")
    lines = gzip.decompress(data.read_bytes()).decode("ascii").split()
    return (
        frozenset(x for x in lines if x[0] != "~"),
        frozenset(x[1:] for x in lines if x[0] == "~"),
    )


@cache
def systems() -> tuple[frozenset[str], frozenset[str]]:
    """The shipped names of well-known systems (memoryd/data/systems-en.txt), lower-cased: (every
    name, the one-word names that are a system in lower case too: not an English word)."""
    names = data_lines("systems-en.txt")
    every = frozenset(x.lstrip("~") for x in names)
    lower = frozenset(x for x in names if x[0] != "~" and " " not in x and len(x) >= 3)
    return every, lower


@cache
def places() -> frozenset[str]:
    """The shipped names of countries, regions and large cities (memoryd/data/places-en.txt),
    lower-cased."""
    return frozenset(data_lines("places-en.txt"))


@cache
def sentence_starters() -> frozenset[str]:
    """Words that open a sentence in six other languages written in Latin script and are no
    name there ("Heute", "Donc", "Pero"; memoryd/data/sentence-starters.txt), lower-cased."""
    return frozenset(w for x in data_lines("sentence-starters.txt") for w in x.split())


# What people write in chat before or instead of a name ("Woah Joanna", "Congrats, Nate!",
# "Yeah John"): never (part of) a name. With the spelt-out forms of `interjection`.
INTERJECTIONS = words(
    "congrats congratulations yeah yep yup nope nah woohoo hooray yay yikes oops whoops ugh "
    "phew whew gosh geez jeez bye meh huh duh ttyl brb idk tbh imo imho lmao rofl ikr thx "
    "anyways anytime c'mon"
)
_INTERJECTION = re.compile(
    r"a+w+|a+h+|(?:ha){2,}h?|aha+|(?:he){2,}h?|heh|wo+a+h?|who+a+|o+h+|o+o+h*|u+[hm]+|h+m+|ya+y+|"
    r"wo+w+|woo+(?:hoo+)?|lo+l+|omg+|so+o+|ye+s+s+|no+o+"
)


def interjection(key: str) -> bool:
    """A lower-cased word that is an interjection as chat spells it: "Awww", "Hahaha", "Hmmm",
    "Woah", "Sooo"."""
    return key in INTERJECTIONS or _INTERJECTION.fullmatch(key) is not None


# Places on the shipped list that are, far more often, an everyday word opening a sentence ("Nice
# to meet you!"): read there like any other common word. Not "Turkey", "China": either is usual.
PLACE_WORDS = words("nice")

# Capitalised words that are never (part of) a name, wherever they stand: function words,
# pronouns, interjections, days and months, and words a sentence or a heading often starts with.
STOP = words(
    "a an the and or but nor so yet if then than that this these those there here where when "
    "what which who whom whose why how i i'm i've i'd i'll me my mine we us our ours you your "
    "yours he him his she her hers it its they them their theirs one two three four five six "
    "seven eight nine ten first second third last next old all any some no not yes ok okay hi "
    "hey hello thanks thank please sorry dear also just only even still maybe perhaps well oh "
    "ah wow lol omg btw fyi asap tbd todo done note notes see re fw fwd cc ps edit update is "
    "are was were be been am do does did has have had can could will would shall should may "
    "might must let lets let's at in on of to for by with from into onto about over under "
    "after before since until via per vs as up out off down again once each every both either "
    "neither monday tuesday wednesday thursday friday saturday sunday today tomorrow "
    "yesterday tonight january february march april may june july august september october "
    "november december jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri "
    "sat sun morning afternoon evening night week weekend month year day q1 q2 q3 q4 h1 h2 am "
    "pm utc gmt cet cest pst pdt est edt tl dr eta eod eow faq id ids api apis url urls cpu "
    "gpu ram ssd dns sql http https json yaml toml csv pdf html css tls ssl ssh tcp udp ip vm "
    "vms os ui ux qa pr prs ci cd sla slo sli mvp kpi okr ceo cto cfo coo vp hr it's that's "
    "there's what's he's she's we're they're you're don't can't won't isn't usd eur gbp jpy "
    "cny wip nb ie eg etc aka"
)

HONORIFICS = words(
    "mr mrs ms miss mx dr prof professor sir dame lord lady madam mme mlle herr frau sr sra "
    "srta don dona president senator governor mayor judge uncle aunt auntie grandma grandpa "
    "coach captain capt colonel col lieutenant lt sergeant sgt admiral brigadier corporal"
)
# A person's role, before the name ("CEO Ana Souza") or after it and a comma ("Ana Souza, CEO of",
# "Ana Souza, the founder").
ROLES = words(
    "ceo cto cfo coo cio founder cofounder co-founder director engineer researcher professor "
    "author writer novelist poet singer songwriter drummer guitarist bassist actor actress "
    "composer painter artist player striker goalkeeper pitcher politician minister "
    "scientist physicist mathematician economist philosopher historian journalist lawyer "
    "chairman chairwoman chair head president"
)

# Words inside a multi-word name: "Bank of America", "Ludwig van Beethoven".
CONNECTORS = words("of de van von der den da del della di du la le al bin ibn y")
GERMAN_CONNECTORS = CONNECTORS - {"der", "den"}  # on a German line the articles they are

# After a name: says a person did something (a word of speech or thought), or is a speaker.
PERSON_AFTER = words(
    "said says told tells asked asks replied replies wrote writes thinks thought agreed "
    "agrees suggested suggests mentioned mentions explained explains answered answers feels "
    "felt wants wanted loves loved likes liked laughed smiled cried herself himself "
    "prefers preferred leads led joined works worked lives lived grew paid covers covered "
    "teaches taught plays played met talked went moved looks looked travels travelled "
    "traveled starts started owns"
)
# The verbs of PERSON_AFTER that a team, a band or a company does as well ("the Bruins played",
# "Nimbus moved"): a weaker vote.
PERSON_AFTER_WEAK = words(
    "leads led joined works worked grew paid covers covered plays played went moved looks "
    "looked starts started owns"
)
PRONOUNS = words("she he her his him herself himself")
KIN = words(
    "sister brother mother father mom dad wife husband son daughter friend colleague manager "
    "boss cousin girlfriend boyfriend partner aunt uncle niece nephew grandmother grandfather"
)
# Before a name, two words: "talked to X", "spoke with X".
PERSON_BEFORE_2 = phrases(
    "talked to|spoke to|spoke with|talked with|said to|wrote to|sent to|gave to|according to|"
    "meeting with|call with|lunch with|dinner with|married to"
)
# Before a name, two words: an organisation one works for, a system one moves to.
SYSTEM_BEFORE_2 = phrases(
    "works at|work at|working at|works for|work for|joined from|job at|hired by|"
    "worked at|worked for|working for|starts at|started at|start at|starting at|"
    "employed at|employed by|intern at|internship at|offer from|interview at|interviews at|"
    "interviewed at|interviewing at|engineer at|developer at|manager at|designer at|"
    "acquired by|customer of|migrate to|migrated to|switched to|built on|"
    "based on|written in|replaced by|keep in|stored in"
)
# Words a sentence starts with that never start a name: imperatives and the like ("Ask Melanie",
# "Ping Tom", "Check Grafana", "Unlike Kafka"). Capitalised at the start of a sentence they were
# read as the name's first word; a run keeps the words after them.
LEADING = words(
    "ask tell ping call email mail text message remind invite meet thank thanks congratulate "
    "cc loop welcome check see add use try run install deploy restart stop start move send "
    "get give make set fix update upgrade review read write close follow contact like unlike "
    "per about regarding re congrats happy dear hey hi hello bet "
    # what a how-to tells the reader to do ("Open Obsidian", "Select Files and links")
    "open select click press choose enable disable launch navigate drag toggle create paste "
    "copy save rename delete tap hover insert export import download upload visit browse "
    "expand collapse scroll configure quit reload refresh remove"
)
# Before a name: a person is addressed, thanked, met, asked.
PERSON_BEFORE = words(
    "thanks thank ask asked tell told ping pinged met meet call called email emailed cc dear "
    "hi hey hello congrats congratulations sister brother mother father mom dad wife husband "
    "son daughter friend colleague manager boss cousin girlfriend boyfriend partner with"
)
# After a name: says it is a system, product, organisation or project.
SYSTEM_AFTER = words(
    "service services api apis cluster clusters server servers database databases db queue "
    "queues pipeline pipelines repo repos repository project library lib sdk app apps bot "
    "tool tools dashboard dashboards plugin plugins module modules framework engine platform "
    "release releases version versions driver drivers instance instances node nodes job jobs "
    "worker workers daemon backend frontend client clients cli binary image images container "
    "containers pod pods deployment config schema table tables index inc corp corporation ltd "
    "llc gmbh co company labs systems technologies software foundation university college "
    "institute group team teams migration integration account accounts logs outage quota "
    "support ticket bucket buckets credentials token tokens webhook webhooks console docs "
    "documentation plan subscription license licence"
)
ORG_SUFFIX = words(
    "inc corp corporation ltd llc gmbh plc labs systems technologies software foundation "
    "university college institute bank group association society academy council committee "
    "agency press studios records motors robotics airlines airways pharmaceuticals holdings "
    "partners ventures capital media"
)
ORG_SUFFIX_2 = words(
    "league railway railroad railways club band orchestra choir party army navy corps "
    "division regiment brigade battalion church festival union federation team school "
    "united fc"
)
PLACE_SUFFIX_2 = words("center centre stadium park hall gym arena field playfield mall")
ORG_PREFIX = words(
    "university bank bureau department ministry institute college school hospital church "
    "museum council agency"
)
# Before a name: something is run, deployed or used.
SYSTEM_BEFORE = words(
    "deploy deployed deploying install installed installing upgrade upgraded upgrading "
    "restart restarted restarting migrate migrated migrating using use used via run runs "
    "running on onto configure configured enable enabled disable disabled switched through "
    "drop dropped replace replaced adopt adopted try tried evaluate evaluated chose choose"
)
# After a name: says it is a place ("the Dublin office", "the Berlin offsite").
PLACE_AFTER = words(
    "office offices offsite flat apartment house trip region branch campus area neighbourhood "
    "neighborhood airport station"
)
# Before a name: a place ("moved to X", "based in X").
PLACE_BEFORE = words("in at near from")
PLACE_BEFORE_2 = frozenset(
    """moved to|flew to|trip to|travel to|travelled to|traveled to|went to|going to|
    based in|lives in|living in|live in|born in|office in|back from|visit|visited|
    visiting|vacation in|holiday in|stayed in|stay in|arrived in|landed in|near|
    capital of|city of|north of|south of|east of|west of""".replace("\n", "")
    .replace("    ", "")
    .split("|")
)
PLACE_PREFIX = words(
    "new san santa los las saint st st. lake mount mt port fort north south east west upper "
    "lower great little cape rio"
)
PLACE_SUFFIX = words(
    "city street st avenue ave road rd river bay island islands beach valley county lake "
    "airport station square bridge mountains mountain hills falls harbor harbour coast "
    "district province state village town heights gardens"
)
SYSTEM_SUFFIX = (
    "ctl",
    "db",
    "sql",
    "js",
    "ql",
    "hub",
    "base",
    "kit",
    "flow",
    "stack",
    "cloud",
    "lab",
    "soft",
    "ware",
    "bot",
    "ops",
    "api",
)
ACRONYM_OK = re.compile(r"^[A-Z][A-Z0-9&]{1,6}$")
VERSION = re.compile(r"^v?\d+(?:\.\d+)*$")
# A version after a name: dotted in the gap before the next word ("Python 3.12 is"), or a
# word of its own with a "v" ("Node v20"). A bare number is not one ("Season 3", "Rule 6",
# "Part 2" on WNUT-17).
VERSION_GAP = re.compile(r" \d+\.\d+(?:\.\d+)*(?:[ ,;:)]|\.?$)")
V_VERSION = re.compile(r"v\d+(?:\.\d+)*")
# Words that mark a CJK name as a person: 田中さん, 李明老师.
CJK_HONORIFICS = ("さん", "様", "先生", "老师", "老師", "同学", "经理", "總", "君", "ちゃん", "氏")
# Front-matter fields and the type their values have.
FIELD_TYPES = {
    **dict.fromkeys(
        words(
            "people person persons attendees attendee participants participant authors author "
            "speakers speaker members member with contacts contact assignee assignees "
            "reviewers reviewer host guests guest family friends"
        ),
        PERSON,
    ),
    **dict.fromkeys(
        words(
            "projects project systems system services service repo repos repository "
            "components component tools tool products product apps app organization "
            "organisation org orgs organizations companies company clients client"
        ),
        SYSTEM,
    ),
    **dict.fromkeys(
        words("places place location locations city cities country countries venue where"),
        PLACE,
    ),
    **dict.fromkeys(words("tags tag keywords topics"), TAG),
    **dict.fromkeys(words("entities related mentions links see_also"), OTHER),
}
# A line that starts with one of these fields and a colon types the names on it.
LINE_FIELDS = {**FIELD_TYPES, **dict.fromkeys(words("owner owners lead leads"), PERSON)}
# A note whose front matter says `type: person` (or another of these) is that kind of entity.
NOTE_TYPES = {
    "person": PERSON,
    "people": PERSON,
    "contact": PERSON,
    "project": SYSTEM,
    "system": SYSTEM,
    "service": SYSTEM,
    "product": SYSTEM,
    "tool": SYSTEM,
    "company": SYSTEM,
    "organization": SYSTEM,
    "organisation": SYSTEM,
    "place": PLACE,
    "location": PLACE,
    "city": PLACE,
}
