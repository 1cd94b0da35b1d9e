"""The tiled camera renders every env in one call: images change with the scene, depth and
segmentation agree with MuJoCo's C ray cast through each pixel, bad settings are refused, and an
env observes images in a group of their own."""

from __future__ import annotations

import dataclasses
import math

import mujoco
import mujoco_warp as mjw
import numpy as np
import pytest
import torch

import phalanx
from helpers import make_cpu, random_actions
from phalanx.core.errors import ConfigError
from phalanx.envs.cfg import ObsTermCfg
from phalanx.envs.mdp import observations
from phalanx.sensors import TiledCamera
from phalanx.sim import SimCfg, Simulator

SCENE = """
<mujoco>
  <worldbody>
    <camera name="down" pos="0 0 2" xyaxes="1 0 0 0 1 0" fovy="50"/>
    <geom name="floor" type="plane" size="5 5 0.1" rgba="0.2 0.6 0.2 1"/>
    <body name="block" pos="0 0.25 0.25">
      <joint name="slide" type="slide" axis="1 0 0"/>
      <geom name="block" type="box" size="0.2 0.3 0.25" rgba="0.9 0.1 0.1 1"/>
    </body>
  </worldbody>
</mujoco>"""
W, H = 33, 25


def _scene(num_envs: int, blocks_x: list[float]) -> Simulator:
    sim = Simulator(mujoco.MjModel.from_xml_string(SCENE), num_envs, "cpu", SimCfg(decimation=1))
    sim.qpos[:, 0] = torch.tensor(blocks_x)  # no forward pass: the camera poses the geoms itself
    return sim


def test_every_env_renders_its_own_scene() -> None:
    sim = _scene(3, [0.0, 0.5, 0.0])
    camera = TiledCamera(sim, "down", width=W, height=H, data_types=("rgb", "depth", "segmentation"))
    images = camera()
    assert images["depth"].data_ptr() == camera()["depth"].data_ptr(), "depth is a view of the render buffer"
    assert images["rgb"].shape == (3, H, W, 3) and images["rgb"].dtype == torch.uint8
    assert images["depth"].shape == (3, H, W, 1) and images["depth"].dtype == torch.float32
    assert images["segmentation"].shape == (3, H, W, 1) and images["segmentation"].dtype == torch.int32
    rgb = images["rgb"].int()
    assert torch.equal(rgb[0], rgb[2]) and not torch.equal(rgb[0], rgb[1]), "the moved block changes env 1 only"
    block = images["segmentation"][..., 0] == sim.mjm.geom("block").id
    red = (rgb[..., 0] > 2 * rgb[..., 1]) & (rgb[..., 0] > 2 * rgb[..., 2])  # lit or in shade
    assert torch.equal(red, block), "the red pixels are the block's"
    assert 20 < int(block[0].sum()) < W * H // 2


def test_the_camera_sees_the_joint_positions_now_not_the_last_physics_step() -> None:
    sim = _scene(2, [0.0, 0.5])
    sim.launch(lambda: mjw.forward(sim.model, sim.data))
    camera = TiledCamera(sim, "down", width=W, height=H, data_types=("depth",))
    before = camera()["depth"].clone()
    assert not torch.equal(before[0], before[1])
    sim.qpos[0, 0] = 0.5  # as a reset writes it: the data's geom poses still show the block at 0
    after = camera()["depth"]
    torch.testing.assert_close(after[0], after[1], rtol=0, atol=0)
    torch.testing.assert_close(after[1], before[1], rtol=0, atol=0)
    assert float(sim.xpos[0, 1, 0]) == 0.0, "the sim's own data is left as the physics step left it"


def test_depth_and_segmentation_match_mujocos_ray_through_each_pixel() -> None:
    """Row 0 is the top of the image, column 0 its left; depth is planar (along the optical axis)."""
    sim = _scene(2, [0.0, -0.45])
    images = TiledCamera(sim, "down", width=W, height=H, data_types=("depth", "segmentation"))()
    mjm = sim.mjm
    data = mujoco.MjData(mjm)
    f = (H / 2) / math.tan(math.radians(mjm.cam_fovy[0]) / 2)  # focal length in pixels
    for env in range(2):
        data.qpos[:] = sim.qpos[env].numpy()
        mujoco.mj_forward(mjm, data)
        pos, rot = data.cam_xpos[0], data.cam_xmat[0].reshape(3, 3)
        geoms, depth = np.empty((H, W), dtype=int), np.empty((H, W))
        for row in range(H):
            for col in range(W):
                local = np.array([(col + 0.5 - W / 2) / f, -(row + 0.5 - H / 2) / f, -1.0])  # camera looks along -z
                direction = rot @ (local / np.linalg.norm(local))
                hit = np.zeros(1, dtype=np.int32)
                distance = mujoco.mj_ray(mjm, data, pos, direction, None, 1, -1, hit)
                geoms[row, col], depth[row, col] = hit[0], distance / np.linalg.norm(local)
        seg = images["segmentation"][env, ..., 0].numpy()
        assert (seg == geoms).mean() > 0.97, f"env {env}: pixels on the block's edges may round either way"
        agree = seg == geoms
        np.testing.assert_allclose(images["depth"][env, ..., 0].numpy()[agree], depth[agree], atol=1e-4)
        assert set(np.unique(seg)) == {0, 1}


def test_segmentation_as_stable_class_ids() -> None:
    sim = _scene(2, [0.0, 0.5])
    raw = TiledCamera(sim, "down", W, H, ("segmentation",))()["segmentation"]
    classes = {"obstacle": "block", "ground": "floor|rail"}  # "rail" matches nothing here: allowed in a pattern
    got = TiledCamera(sim, "down", W, H, ("segmentation",), classes=classes)()["segmentation"]
    block, floor = sim.mjm.geom("block").id, sim.mjm.geom("floor").id
    assert torch.equal(got, torch.where(raw == block, 1, torch.where(raw == floor, 2, 0)).int())
    assert set(got.unique().tolist()) == {1, 2}
    with pytest.raises(ValueError, match="camera class 'ground': 'f.*' matches no geom an earlier class left"):
        TiledCamera(sim, "down", data_types=("segmentation",), classes={"all": ".*", "ground": "f.*"})


def test_a_flag_on_the_device_decides_whether_it_renders() -> None:
    sim = _scene(1, [0.0])
    camera = TiledCamera(sim, "down", width=W, height=H, data_types=("depth",))
    before = camera(torch.tensor(True))["depth"].clone()
    sim.qpos[0, 0] = 0.5
    assert torch.equal(camera(torch.tensor(False))["depth"], before), "not due: the last render stays"
    assert not torch.equal(camera(torch.tensor(1))["depth"], before)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"width": 0}, "camera width must be a positive number of pixels, got 0"),
        ({"data_types": ("rgb", "normals")}, "camera data_types \\['rgb', 'normals'\\]: allowed are one or more of"),
        ({"camera": "head"}, "no camera named 'head'; the model has \\['down'\\]"),
    ],
)
def test_bad_settings_name_the_field(kwargs: dict, message: str) -> None:
    sim = _scene(1, [0.0])
    with pytest.raises(ValueError, match=message):
        TiledCamera(sim, **{"camera": "down", **kwargs})


def _cartpole_seeing(**groups) -> phalanx.envs.cfg.TaskCfg:
    cfg = phalanx.env_cfg("cartpole")
    for group, terms in groups.items():
        cfg.observations[group] = terms
    return cfg


RGB = ObsTermCfg(func=observations.camera_image, params={"camera": "track", "width": 32, "height": 24})


def test_an_image_group_beside_the_policy_vector() -> None:
    env = make_cpu(_cartpole_seeing(image={"rgb": RGB}), num_envs=4)
    assert env.observation_spec == {"policy": (4,), "image": (24, 32, 3)}
    generator = torch.Generator().manual_seed(0)
    for _ in range(3):
        obs, *_ = env.step(random_actions(env, generator))
    image = obs["image"]
    assert image.dtype == torch.uint8 and image.shape == (4, 24, 32, 3)
    assert len({bytes(image[i].numpy()) for i in range(4)}) == 4, "each env's cart and pole are where its own are"


@pytest.mark.parametrize("data_type", ["rgb", ["rgb", "depth", "segmentation"], "depth", ["depth", "rgb"]])
def test_a_video_shows_the_policys_colour_image_in_colour(data_type) -> None:
    """What the policy sees, as a video or the viewer shows it: the RGB channels in colour when an
    image group starts with them (as uint8 alone, as floats in [0, 1] stacked with depth and
    segmentation), else the first channel in gray."""
    from phalanx.sim.video import policy_view

    term = dataclasses.replace(RGB, params={**RGB.params, "data_type": data_type})
    env = make_cpu(_cartpole_seeing(image={"eye": term}), num_envs=1)
    colour = observations.colour_first(env.cfg.observations["image"])
    assert colour == (data_type == "rgb" or data_type[0] == "rgb")
    shown = policy_view(env.obs["image"][0], colour)
    assert shown.shape == (24, 32, 3) and shown.dtype == np.uint8
    gray = (shown[..., 0] == shown[..., 1]).all() and (shown[..., 1] == shown[..., 2]).all()
    assert gray != colour
    if colour:
        alone = make_cpu(_cartpole_seeing(image={"eye": RGB}), num_envs=1).obs["image"][0].numpy()
        np.testing.assert_allclose(shown.astype(int), alone.astype(int), atol=1)  # 255 * (rgb / 255)


def _rgb_every(every: int) -> ObsTermCfg:
    return dataclasses.replace(RGB, params={**RGB.params, "every": every})


def test_a_camera_rendering_every_third_step_shows_its_last_render_in_between() -> None:
    """Beside an env that renders every step (same seed, same actions): at steps 3, 6, ... both
    see the same images, final observations included; in between, the last render."""
    every_step, every_third = (make_cpu(_cartpole_seeing(image={"rgb": _rgb_every(k)}), 4) for k in (1, 3))
    generator = torch.Generator().manual_seed(0)
    shown = every_step.obs["image"].clone()
    assert torch.equal(every_third.obs["image"], shown), "the first observations are rendered"
    for step in range(1, 8):
        action = random_actions(every_step, generator)
        fresh, _, _, _, fresh_extras = every_step.step(action)
        seen, _, _, _, extras = every_third.step(action)
        final = fresh_extras["final_obs"]["image"] if step % 3 == 0 else shown
        assert torch.equal(extras["final_obs"]["image"], final), f"step {step}"
        if step % 3 == 0:
            assert not torch.equal(fresh["image"], shown), "the carts moved"
            shown = fresh["image"].clone()
        assert torch.equal(seen["image"], shown), f"step {step}"
    assert torch.equal(seen["policy"], fresh["policy"])


def test_a_resumed_env_shows_the_render_it_saved() -> None:
    cfg = _cartpole_seeing(image={"rgb": _rgb_every(3)})
    env, resumed = make_cpu(cfg, 4, seed=0), make_cpu(cfg, 4, seed=1)
    generator = torch.Generator().manual_seed(0)
    for _ in range(4):  # the last render at step 3
        env.step(random_actions(env, generator))
    resumed.load_state_dict(env.state_dict())
    action = random_actions(env, generator)
    assert torch.equal(resumed.step(action)[0]["image"], env.step(action)[0]["image"])


def test_a_camera_every_zero_steps_is_refused() -> None:
    with pytest.raises(ValueError, match="camera every must be a positive number of env steps, got 0"):
        make_cpu(_cartpole_seeing(image={"rgb": _rgb_every(0)}), 2)


def test_vectors_and_images_in_one_group_name_the_group() -> None:
    with pytest.raises(ConfigError, match="env.observations.policy: terms of shapes .* cannot be concatenated"):
        make_cpu(_cartpole_seeing(policy={**phalanx.env_cfg("cartpole").observations["policy"], "rgb": RGB}), 2)


def test_the_mlp_actor_critic_refuses_an_image_policy() -> None:
    from phalanx.rl.cfg import PolicyCfg
    from phalanx.rl.models import ActorCritic

    env = make_cpu(_cartpole_seeing(policy={"rgb": RGB}), num_envs=2)
    with pytest.raises(ConfigError, match="env.observations.policy: the actor-critic reads vectors.*image-group"):
        ActorCritic.for_env(env.observation_spec, env.action_dim, PolicyCfg())


def test_the_trainer_trains_beside_an_image_group_it_does_not_read() -> None:
    from rich.console import Console

    from phalanx.training.trainer import Trainer

    env = make_cpu(_cartpole_seeing(image={"rgb": RGB}), num_envs=8)
    cfg = phalanx.train_cfg("cartpole")
    cfg.num_steps_per_env = 4
    trainer = Trainer(cfg, env, run_dir=None, console=Console(quiet=True))
    assert set(trainer._obs_in) == {"policy"}, "the policy's input holds the groups it reads"
    rows = [trainer.iterate() for _ in range(2)]
    assert rows[-1]["frames"] == 2 * 8 * 4
