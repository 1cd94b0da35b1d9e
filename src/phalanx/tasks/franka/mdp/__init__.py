"""Terms of the arm's tasks only: differential IK actions, the lift's and the drawer's terms."""
