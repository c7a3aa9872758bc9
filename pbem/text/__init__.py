"""Words, messages, times and links: what every layer says."""
