"""Online evaluation: the telemetry of real agent sessions and what is made of it (the MCP
proxy, harvest)."""
