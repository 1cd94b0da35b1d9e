"""Terms of the hand's tasks only: the cube's goal orientations, keypoints and successes."""
