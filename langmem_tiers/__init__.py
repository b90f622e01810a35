"""langmem_tiers."""
