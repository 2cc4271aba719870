"""Stage 1, the campaign spec: the file format (pydantic models), the YAML loader with line numbers,
the JSON Schema, and the catalog of what ncu 2025.3.1 accepts. Imports nothing from later stages."""
