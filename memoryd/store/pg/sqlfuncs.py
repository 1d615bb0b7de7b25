"""The SQL functions and triggers the PostgreSQL schema installs (store/pg/schema.py): SQLite's
JSON functions the shared SQL uses, words split as SQLite's unicode61 splits them, CJK bigrams and
characters, NFC, the trigger that fills each entry's weighted tsvector, and the change
notifications other daemons of a shared database listen to."""

from __future__ import annotations

import functools
import re

import psycopg

from memoryd.store import tables, tokenizer
from memoryd.store.protocol import one
from memoryd.text import symbolchars

# SQLite's JSON functions that the shared SQL uses, over the same TEXT columns: json_each(tags)
# (the elements of a JSON array) and json_group_array(x) (an aggregate giving a JSON array).
SQLITE_FUNCTIONS = """
CREATE FUNCTION json_each(t TEXT) RETURNS TABLE(value TEXT)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT jsonb_array_elements_text(CASE WHEN jsonb_typeof(t::jsonb) = 'array'
                                          THEN t::jsonb ELSE '[]'::jsonb END)
$fn$;
CREATE FUNCTION memoryd_json_array(a TEXT[]) RETURNS TEXT
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$ SELECT coalesce(array_to_json(a)::text, '[]') $fn$;
CREATE AGGREGATE json_group_array(TEXT) (
    SFUNC = array_append, STYPE = TEXT[], FINALFUNC = memoryd_json_array, INITCOND = '{}'
);
"""


@functools.cache
def nonword_class(marks: bool = True) -> str:
    """A regex bracket body (ranges of \\u / \\U escapes) of every character that is not a
    letter or digit by Python's Unicode rules (`[^\\W_]`, as store/pg/fts.py splits queries).
    The index splits words with it instead of PostgreSQL's \\W, which follows the database's
    locale: in a database created with LC_CTYPE C, \\W matches every non-ASCII letter, and
    "café" was indexed as "caf" while the query asked for "café".

    Kept once made: asking a million characters takes seconds, which every migration of a new
    database paid twice (schema v1, v15), in a daemon's process or the test suite's."""
    # letters, digits and (since v15) combining marks
    word = re.compile(tokenizer.WORD if marks else r"[^\W_]")
    ranges: list[tuple[int, int]] = []
    start: int | None = None
    for cp in range(1, 0x110000):
        nonword = not 0xD800 <= cp <= 0xDFFF and word.match(chr(cp)) is None
        if nonword and start is None:
            start = cp
        elif not nonword and start is not None:
            ranges.append((start, cp - 1))
            start = None
    if start is not None:
        ranges.append((start, 0x10FFFF))

    def esc(cp: int) -> str:
        return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"

    return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in ranges)


CJK_FUNCTION = """
-- Words as SQLite's unicode61 tokenizer splits them (runs of letters, digits and, since v15,
-- combining marks; Greek final sigma as sigma, as unicode61 folds it), so that
-- "foo.bar", "v1.2", "a_b" or an e-mail address give the same terms on both backends (the
-- english parser alone keeps them whole as host, version or email tokens), and a CJK run is a
-- word of its own ("用PostgreSQL作为" holds "postgresql"; its bigrams come from
-- memoryd_cjk_bigrams). Search translates its queries to the same words (store/pg/fts.py).
CREATE FUNCTION memoryd_fts_text(t TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT regexp_replace(
        regexp_replace(translate(@TEXT@, '@FROM@', '@TO@'), '([@CLASS@]+)', ' \\1 ', 'g'),
        '[@NONWORD@]+', ' ', 'g')
$fn$;
-- The single characters of the CJK runs: the SQLite `cjk` tokenizer indexes each character
-- beside its bigram, so a one-character query (猫, or 用 of a query run cut where the note's
-- is not) finds it.
CREATE FUNCTION memoryd_cjk_chars(t TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT regexp_replace(regexp_replace(coalesce(t, ''), '[^@CLASS@]+', ' ', 'g'),
                          '(@UNIT@)', ' \\1', 'g')
$fn$;
CREATE FUNCTION memoryd_cjk_bigrams(t TEXT) RETURNS TEXT
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
DECLARE
    out TEXT := '';
    run TEXT;
    chars TEXT[];
BEGIN
    IF t IS NULL OR t !~ '[@CLASS@]' THEN
        RETURN '';
    END IF;
    FOR run IN SELECT m[1] FROM regexp_matches(t, '([@CLASS@]+)', 'g') AS m LOOP
        IF length(run) = 1 THEN
            out := out || ' ' || run;
        ELSIF run ~ '[@MARKS@]' THEN
            -- a Thai, Lao, Khmer or Myanmar letter with its marks is one character
            chars := ARRAY(SELECT u[1] FROM regexp_matches(run, '(@UNIT@)', 'g') AS u);
            FOR i IN 1 .. greatest(cardinality(chars) - 1, 1) LOOP
                out := out || ' ' || chars[i] || coalesce(chars[i + 1], '');
            END LOOP;
        ELSE
            FOR i IN 1 .. length(run) - 1 LOOP
                out := out || ' ' || substr(run, i, 2);
            END LOOP;
        END IF;
    END LOOP;
    RETURN out;
END
$fn$;
"""


def cjk_functions(v15: bool = True, replace: bool = False, v19: bool = False) -> str:
    """CJK_FUNCTION for this tokenizer: its runs (CJK, Thai, Lao, Khmer, Myanmar), their
    characters (a letter with its marks: tokenizer.UNIT) and the words' characters (with their
    marks); not `v15`: as schema v1 made them (CJK runs, words cut at marks). `replace`:
    CREATE OR REPLACE (schema v15 gives an older database the current ones). `v19`: symbols
    as words (memoryd_symbols, SYMBOLS_FUNCTION, made first)."""
    text = "memoryd_symbols(coalesce(t, ''))" if v19 else "coalesce(t, '')"
    sql = (
        CJK_FUNCTION.replace("@TEXT@", text)
        .replace("@CLASS@", tokenizer.RUN_CLASS if v15 else tokenizer.CJK_CLASS)
        .replace("@MARKS@", tokenizer.SEA_MARKS)
        .replace("@UNIT@", tokenizer.UNIT.replace("[^", "[^\\s"))  # never a space
        .replace("@NONWORD@", nonword_class(marks=v15))
        .replace("@FROM@", "_ς" if v15 else "_")  # final sigma as sigma (store/pg/fts.py)
        .replace("@TO@", " σ" if v15 else " ")
    )
    return sql.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION") if replace else sql


# Symbols as words (schema v19; text/symbolchars.py says which and why): the english parser
# reads no symbol as a word, so each symbol's grapheme is written as an ASCII word of its own,
# in place ("🚀launch" -> " symb0x1f680 launch"), before memoryd_fts_text splits the words; the
# query's are written alike (store/pg/fts.py). `exact`, for a headline: between \x1f (a
# separator to the parser, taken out again), and when the index folds the grapheme (a skin
# tone, a variation selector) followed by its word as written (@EXACT@...), so that the headline
# finds the first and writes the second back (store/pg/fts.py Headline).
SYMBOLS_FUNCTION = """
CREATE OR REPLACE FUNCTION memoryd_symbol_hex(k TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT string_agg(to_hex(ascii(c)), 'x' ORDER BY n)
    FROM regexp_split_to_table(k, '') WITH ORDINALITY AS s(c, n)
$fn$;
CREATE OR REPLACE FUNCTION memoryd_symbol_word(g TEXT, exact BOOLEAN DEFAULT false) RETURNS TEXT
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT '@PREFIX@' || memoryd_symbol_hex(k)
           || CASE WHEN exact AND k <> g THEN chr(31) || '@EXACT@' || memoryd_symbol_hex(g)
                   ELSE '' END
    FROM (SELECT coalesce(nullif(regexp_replace(f, '[@TONES@]', '', 'g'), ''), f) AS k
          FROM (SELECT coalesce(nullif(regexp_replace(g, '[@VS@]', '', 'g'), ''), g) AS f) v) w
$fn$;
CREATE OR REPLACE FUNCTION memoryd_symbols(t TEXT, exact BOOLEAN DEFAULT false) RETURNS TEXT
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
DECLARE
    parts TEXT[];
    words TEXT[];
    gap TEXT := CASE WHEN exact THEN chr(31) ELSE ' ' END;
    out TEXT;
BEGIN
    IF t IS NULL OR t !~ '@ANY@' THEN
        RETURN t;
    END IF;
    parts := regexp_split_to_array(t, '@GRAPHEME@');
    words := ARRAY(SELECT memoryd_symbol_word(m.g[1], exact)
                   FROM regexp_matches(t, '(@GRAPHEME@)', 'g') WITH ORDINALITY AS m(g, n)
                   ORDER BY m.n);
    out := parts[1];
    FOR i IN 1 .. coalesce(cardinality(words), 0) LOOP
        out := out || gap || words[i] || gap || parts[i + 1];
    END LOOP;
    RETURN out;
END
$fn$;
"""


def symbols_function() -> str:
    return (
        SYMBOLS_FUNCTION.replace("@PREFIX@", symbolchars.PREFIX)
        .replace("@EXACT@", symbolchars.EXACT)
        .replace("@TONES@", symbolchars.TONES)
        .replace("@VS@", symbolchars.VS)
        .replace("@ANY@", symbolchars.ANY)
        .replace("@GRAPHEME@", symbolchars.GRAPHEME)
    )


# Text written decomposed (NFD: a letter, then its combining mark, as macOS names files and some
# apps write text) is indexed composed: the english parser cuts a word at a combining mark
# ("Jose" and a stray mark), where SQLite's unicode61 folds both forms. Queries are composed
# in Python (search/request.py). Only a UTF8 database can normalize; another keeps the text.
NFC_FUNCTION = """
CREATE OR REPLACE FUNCTION memoryd_nfc(t TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$ SELECT @BODY@ $fn$;
"""


def nfc_function(cur: psycopg.Cursor) -> None:
    utf8 = one(cur.execute("SHOW server_encoding"))[0] == "UTF8"
    cur.execute(NFC_FUNCTION.replace("@BODY@", "normalize(t, NFC)" if utf8 else "t"))


FTS_FILL = """
CREATE OR REPLACE FUNCTION memoryd_entries_fill() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
    title TEXT := '';
    content TEXT;
    heading TEXT;
BEGIN
    IF NEW.kind = 'chunk' AND NEW.workspace IS NULL THEN
        NEW.workspace := current_setting('memoryd.workspace');
    END IF;
    IF NEW.document_id IS NOT NULL THEN
        SELECT regexp_replace(path, '^.*/|\\.md$', '', 'g') INTO title
            FROM all_documents WHERE id = NEW.document_id;
    END IF;
    content := memoryd_nfc(NEW.content);
    title := memoryd_nfc(title);
    heading := memoryd_nfc(NEW.heading_path);
    NEW.fts :=
        setweight(to_tsvector('@CONFIG@', memoryd_fts_text(content)), 'A')
        || setweight(to_tsvector('simple', memoryd_cjk_bigrams(content)), 'A')
        || setweight(to_tsvector('simple', memoryd_cjk_chars(content)), 'A')
        || setweight(to_tsvector('@CONFIG@', memoryd_fts_text(coalesce(title, ''))), 'B')
        || setweight(to_tsvector('@CONFIG@', memoryd_fts_text(coalesce(heading, ''))), 'C')
        || setweight(to_tsvector('simple', memoryd_cjk_bigrams(heading)), 'C')
        || setweight(to_tsvector('simple', memoryd_cjk_chars(heading)), 'C')
        || setweight(to_tsvector('@CONFIG@', memoryd_fts_text(memoryd_nfc(NEW.tags))), 'D');
    RETURN NEW;
END
$fn$;
"""
FTS_TRIGGER = """
CREATE TRIGGER entries_fill BEFORE INSERT OR UPDATE OF content, heading_path, tags, kind
    ON all_entries FOR EACH ROW EXECUTE FUNCTION memoryd_entries_fill();
"""
# v14: the tags' weight (D) holds a note's front-matter values too (tables.keyword_tags)
FTS_FILL_PROPS = FTS_FILL.replace(
    "memoryd_nfc(NEW.tags)", f"memoryd_nfc({tables.keyword_tags('NEW')})"
)
FTS_TRIGGER_PROPS = FTS_TRIGGER.replace("tags, kind", "tags, props, kind")
assert FTS_FILL_PROPS != FTS_FILL and FTS_TRIGGER_PROPS != FTS_TRIGGER

# Other daemons on the database drop their caches (trigger phrases, fuzzy vocabulary) when
# memories, chunks or trigger phrases change: one notification per statement on the channel
# `memoryd` (PgStore's listener), naming the table and the writer's workspace, so a daemon can
# skip its own changes. Access counts and feedback (updated by every search) notify nobody.
# Notifications are sent at commit, and only then; identical ones in one
# transaction are sent once.
NOTIFY_CHANNEL = "memoryd"
NOTIFY_TRIGGERS = """
CREATE FUNCTION memoryd_notify_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_notify('memoryd', json_build_object(
        'table', TG_TABLE_NAME,
        'workspace', current_setting('memoryd.workspace', true))::text);
    RETURN NULL;
END
$fn$;
CREATE TRIGGER entries_notify
    AFTER INSERT OR DELETE
       OR UPDATE OF kind, namespace, content, content_hash, type, tags, importance, tier,
                    expires_at
    ON all_entries
    FOR EACH STATEMENT EXECUTE FUNCTION memoryd_notify_change();
CREATE TRIGGER triggers_notify AFTER INSERT OR UPDATE OR DELETE ON triggers
    FOR EACH STATEMENT EXECUTE FUNCTION memoryd_notify_change();
"""
