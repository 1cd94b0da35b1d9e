"""Reusable term functions: observations, rewards, terminations, events, and shared state accessors."""
