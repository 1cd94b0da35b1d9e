"""A web viewer of a task's envs (`phalanx view`): viser serves the scene (the model's geoms, posed
from a few envs' states) and the controls to a browser page."""
