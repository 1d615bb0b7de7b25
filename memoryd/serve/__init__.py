"""The running daemon: App wires the library together (no sockets, no signals); the JSON-RPC
method table (registry, methods, methods_notes) is the only place the wire meets the library;
the asyncio Unix-socket server, the framing rules (protocol), the daemon's lifecycle and
signals, the scheduled jobs, sd_notify, and `memoryd service` (systemd/launchd units).

May import: every package below it: memoryd.core, text, store, memory, index, notes, search.
"""
