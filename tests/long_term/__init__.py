"""The long-term store spec (a package, so its helper modules import without path tricks)."""
