"""Every param that names a workspace note or folder reads a path one way (stop 35, walk a).

An agent wrote `./people/ann.md`: read_note, links and backlinks found the note, `get` (path)
answered "no indexed note", and a search with `path: "./people"` found nothing while
`"/people"` worked there and was refused by list_notes. Now `get`'s path and the `path` filter
of search and list take the notes API's rule (notes/fsops.normalize): `./`, `//` and `\\`
collapse, `..` and absolute paths are refused (-32602), and for a folder '', '.' and '/' mean
the whole workspace, as note.list reads them. On both backends: the filter and `get` read the
store."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import with_notes

from memoryd.core.errors import InvalidInput
from memoryd.serve import methods as api

pytestmark = pytest.mark.backends

NOTE = "people/ann-lee.md"
SPELLINGS = [NOTE, "./people/ann-lee.md", "people//ann-lee.md", "people\\ann-lee.md"]
FOLDERS = ["people", "people/", "./people", "people//", "people\\"]
REFUSED = ["/people/ann-lee.md", "../people/ann-lee.md", "people/../../x.md"]


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


@pytest.fixture
def app(make_app: Any) -> Any:
    return with_notes(
        make_app(model=None),
        {NOTE: "# Ann Lee\n\nAnn runs the quarterly audit.\n", "other.md": "# Other\n\naudit\n"},
    )


@pytest.mark.parametrize("path", SPELLINGS)
def test_every_spelling_of_a_note_path_names_the_note(app: Any, path: str) -> None:
    assert call(app, "note.read", path=path)["path"] == NOTE
    assert call(app, "get", path=path)["path"] == NOTE
    assert call(app, "links", path=path)["path"] == NOTE
    assert call(app, "backlinks", path=path)["path"] == NOTE


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_spelling_of_a_folder_filters_alike(app: Any, folder: str) -> None:
    hits = call(app, "search", query="audit", path=folder, mode="keyword")["hits"]
    assert [h["path"] for h in hits] == [NOTE]
    assert [i["path"] for i in call(app, "note.list", path=folder)["items"]] == [NOTE]
    listed = call(app, "list", kind="chunk", path=folder)["items"]
    assert {i["path"] for i in listed} == {NOTE}


@pytest.mark.parametrize("whole", ["", ".", "/"])
def test_the_workspace_itself_is_no_filter(app: Any, whole: str) -> None:
    hits = call(app, "search", query="audit", path=whole, mode="keyword")["hits"]
    assert {h["path"] for h in hits} == {NOTE, "other.md"}


@pytest.mark.parametrize("path", REFUSED)
def test_a_path_out_of_the_workspace_is_refused_by_every_door(app: Any, path: str) -> None:
    for method, params in [
        ("note.read", {"path": path}),
        ("get", {"path": path}),
        ("search", {"query": "audit", "path": path}),
        ("list", {"path": path}),
        ("note.list", {"path": path}),
    ]:
        with pytest.raises(InvalidInput, match=r"^path: .*(absolute|leaves the workspace)"):
            call(app, method, **params)
