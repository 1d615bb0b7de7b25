"""memoryd.search.searcher."""
