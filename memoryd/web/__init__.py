"""The local web page: browse, search, correct and watch what memoryd holds (docs/web.md).

An adapter like serve's socket server: a small HTTP/1.1 server on the loopback address, in the
daemon's event loop, whose work runs on a thread pool of its own (so the page never takes the
socket's workers). Every route calls the same doors the socket API uses (the method table of
serve/registry.py, through `lookup`), never SQL of its own. The pages are static HTML and plain
JavaScript from static/ (vendored libraries listed with their licences in static/LICENSES);
there is no build step.

Modules: auth.py (token file, one-time login links, sessions, Host/Origin/CSRF checks),
peers.py (which local user a loopback TCP client runs as), http.py (request parsing and
responses), routes.py (the route table: pages and JSON), actions.py (the JSON routes' calls into
the method table), server.py (WebServer: lifecycle, dispatch, security headers).

May import: core, text, store, memory, index, notes, search, and serve (its method table, App
and searchlog). Nothing in memoryd imports web except cli.py, which hands it to the daemon.
"""
