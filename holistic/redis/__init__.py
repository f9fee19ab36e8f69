"""Redis: connections, the private server, the Lua scripts and their loader, every key name, the inventory."""
