"""Search: a request (request.py) runs through the Searcher (searcher.py): the user's text is
parsed into a safe FTS5 expression (ftsquery), the keyword and vector pools run with the filters
inside them (store.searchsql, vecindex), candidates are fused and ranked per note (ranking),
keyword evidence decides "no answer" (evidence, answerability), typos are corrected when nothing
matches (fuzzy; the correction shown as the notes write it: spelled), and the winners become
hits with snippets (hits, snippets).

May import: memoryd.core, memoryd.text, memoryd.store, memoryd.memory, memoryd.index.
"""
