"""Emitting files: the model rendered through templates/ (render), written to generated/ all at
once or not at all (writer), skipped when nothing changed (stamp); what the generated .metal
names on each backend (host_names, metal_syntax); the docs' aten table (aten_table)."""
