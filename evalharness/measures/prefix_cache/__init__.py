"""The prefix-cache check (issue 60, 1): greedy prompts that share long prefixes, each answered with the engine's
prefix cache cold (flushed through the engine's own endpoint) and warm (its prefix cached by a sibling prompt just
before), paired per prompt; a cell whose answers change with the cache more often than the reference's is flagged."""
