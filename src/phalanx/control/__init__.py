"""Controllers that run batched on the GPU inside the env step."""
