"""The ANYmal-C-like quadruped's tasks: velocity tracking on flat ground and on terrain, navigation
over a frozen walking policy (velocity.py), RL over a QP body controller (qp.py), stepping stones
(stones.py); their own terms in mdp/."""
