"""The Shadow-like hand's in-hand cube reorientation, from state and from a camera (cube.py); its
own terms in mdp/."""
