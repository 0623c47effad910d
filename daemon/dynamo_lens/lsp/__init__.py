"""The LSP edge of the daemon: pygls server and lsprotocol conversions."""
