"""A module the preload test imports before the child is ready."""

LOADED = True
