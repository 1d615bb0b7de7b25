"""Scripts written without spaces between words, by code point range: the one definition the
keyword index (store/tokenizer.py: bigrams of their runs), the query parser (search/ftsquery.py)
and the token estimate (text/markdown.py estimate_tokens: about one token a character) share."""

from __future__ import annotations

# Chinese, Japanese, Korean (Korean is spaced, but particles are attached: 데이터베이스를).
CJK_CLASS = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi radicals
    "\u3005-\u3007"  # 々 〆 〇
    "\u3021-\u3029\u3031-\u3035"  # Hangzhou numerals, kana repeat marks
    "\u3040-\u309f"  # Hiragana
    "\u30a1-\u30fa\u30fc-\u30ff"  # Katakana (without ゠ and the middle dot ・)
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"  # Hangul Jamo extended A
    "\uac00-\ud7ff"  # Hangul syllables, Jamo extended B
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\U0001b000-\U0001b16f"  # kana supplement and extensions
    "\U00020000-\U0003134f"  # CJK extensions B-G, compatibility supplement
)
# Thai, Lao, Khmer, Myanmar: no spaces between words either (m016); searched as CJK is, a phrase
# of its characters' bigrams, but a long run is never split into its bigrams in the any-term
# query (search/ftsquery.py sentence_run): a word no note holds finds nothing.
SEA_CLASS = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff\u19e0-\u19ff"  # Khmer, Khmer symbols
    "\ua9e0-\ua9ff\uaa60-\uaa7f"  # Myanmar extended B and A
)
RUN_CLASS = CJK_CLASS + SEA_CLASS
# What a model's tokenizer spends about one token (often more) on, character by character: the
# runs above, marks included (a Thai vowel sign is a character of its own to a BPE vocabulary),
# and every CJK block with the punctuation, symbols and full-width forms the index does not read
# as words (、。「」, ㈱, Ａ) but a budget must count.
WIDE_CLASS = (
    RUN_CLASS
    + "\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff00-\uffef\U00020000-\U0003ffff"
)
