"""Terms of the quadruped's tasks only: navigation goals, the QP body controller as an action."""
