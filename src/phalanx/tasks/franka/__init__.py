"""The Franka-like arm's tasks: reach (joint targets or differential IK, reach.py), lift a cube
(lift.py), open a drawer (cabinet.py); their own terms in mdp/."""
