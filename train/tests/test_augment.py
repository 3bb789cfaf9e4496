"""augment.py: the elastic displacement and the stroke-width change are computed only for the lines drawn for them,
and give bit for bit what the straightforward whole-batch form gives (every line computed, the others masked out),
so that the training runs before and after the change see the same batches for the same seeds. Real handwritten
lines from the repository's fixtures (support.py), padded into one batch at the 64 px source height."""

from __future__ import annotations

import unittest

import support  # noqa: F401  (puts train/ on sys.path)

import torch
import torch.nn.functional as F

import augment


def whole_batch_geometric(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """The elastic field upsampled for every line and masked to zero on the lines not drawn for it."""
    n, _, h, w = x.shape
    grid = augment.affine_grid(x, g)
    elastic = augment._chance(g, n, 0.6).float().view(n, 1, 1, 1)
    amplitude = augment._uniform(g, n, 0.5, 2.2).view(n, 1, 1, 1)
    coarse = torch.randn(n, 2, max(2, h // 16), max(2, w // 16), generator=g)
    field = F.interpolate(coarse, size=(h, w), mode="bicubic", align_corners=False) * amplitude * elastic
    field = torch.stack([field[:, 0] * (2.0 / w), field[:, 1] * (2.0 / h)], dim=-1)
    return F.grid_sample(x - 1.0, grid + field, mode="bilinear", padding_mode="zeros", align_corners=False) + 1.0


def whole_batch_stroke_width(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    n = x.shape[0]
    draw = torch.rand(n, generator=g)
    thicker = -F.max_pool2d(-x, 3, stride=1, padding=1)
    thinner = 0.5 * (x + F.max_pool2d(x, 3, stride=1, padding=1))
    pick_thick = (draw < 0.2).view(n, 1, 1, 1)
    pick_thin = ((draw >= 0.2) & (draw < 0.35)).view(n, 1, 1, 1)
    return torch.where(pick_thick, thicker, torch.where(pick_thin, thinner, x))


class AugmentTest(support.TinyDatasetCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        images = [torch.from_numpy(cls.store.load(line.file)).float()[None] / 255.0 for line in cls.train_lines]
        width = max(image.shape[-1] for image in images)
        cls.batch = torch.ones(len(images), 1, images[0].shape[-2], width)
        for i, image in enumerate(images):
            cls.batch[i, :, :, : image.shape[-1]] = image

    def test_only_the_drawn_lines_are_computed_with_the_same_result(self) -> None:
        drawn = {"elastic": set(), "thick or thin": set()}
        for seed in range(40):
            for cheap, reference in ((augment.geometric, whole_batch_geometric), (augment.stroke_width, whole_batch_stroke_width)):
                out = cheap(self.batch, torch.Generator().manual_seed(seed))
                self.assertTrue(torch.equal(out, reference(self.batch, torch.Generator().manual_seed(seed))), f"{cheap.__name__}, seed {seed}")
            g = torch.Generator().manual_seed(seed)
            augment.affine_grid(self.batch, g)  # geometric's draws before its choice of elastic lines
            drawn["elastic"].add(int(augment._chance(g, len(self.batch), 0.6).sum()))
            drawn["thick or thin"].add(int((torch.rand(len(self.batch), generator=torch.Generator().manual_seed(seed)) < 0.35).sum()))
        # the seeds cover batches where none, some and all of the lines are drawn (so both paths are compared)
        self.assertIn(0, drawn["thick or thin"])
        self.assertGreater(len(drawn["elastic"]), 2)
        self.assertGreater(len(drawn["thick or thin"]), 2)

    def test_the_augmentation_changes_the_lines_it_draws(self) -> None:
        out = augment.augment_source(self.batch, torch.Generator().manual_seed(5))
        self.assertEqual(out.shape, self.batch.shape)
        self.assertFalse(torch.allclose(out, self.batch))


    def test_bitonal_lines_are_ink_or_paper_and_the_others_untouched(self) -> None:
        n = len(self.batch)
        made = set()
        for seed in range(12):
            out = augment.bitonal(self.batch, torch.Generator().manual_seed(seed), 0.5)
            for i in range(n):
                if torch.equal(out[i], self.batch[i]):
                    made.add("untouched")
                else:
                    self.assertTrue(bool(((out[i] == 0) | (out[i] == 1)).all()), f"seed {seed}, line {i}")
                    # the writing survives as ink: at least most of what was darker than mid-grey
                    self.assertGreater(int((out[i] == 0).sum()), 0.5 * int((self.batch[i] < 0.5).sum()))
                    made.add("bitonal")
        self.assertEqual(made, {"untouched", "bitonal"})

    def test_no_bitonal_chance_draws_nothing(self) -> None:
        # runs without --bitonal replay the augmentation of the runs before it
        g = torch.Generator().manual_seed(3)
        self.assertIs(augment.bitonal(self.batch, g, 0.0), self.batch)
        self.assertEqual(float(torch.rand(1, generator=g)), float(torch.rand(1, generator=torch.Generator().manual_seed(3))))

    def test_the_integral_image_box_mean_is_the_pooled_mean_cut_at_the_edges(self) -> None:
        x = torch.rand(2, 1, 64, 301, generator=torch.Generator().manual_seed(1))
        for window in (3, 21, 45, 63):
            reference = F.avg_pool2d(x, window, stride=1, padding=window // 2, count_include_pad=False)
            self.assertLess(float((augment.box_mean(x, window) - reference).abs().max()), 1e-5, f"window {window}")

    def test_sauvola_keeps_a_pale_stroke_on_darkening_paper_and_white_paper_white(self) -> None:
        paper = torch.linspace(235, 115, 200).view(1, 1, 1, 200).expand(1, 1, 64, 200).clone() / 255
        paper[..., 30:33, :] -= 50 / 255  # a pale horizontal stroke across it
        out = augment.sauvola(paper, 31, 0.2)
        self.assertTrue(bool((out[..., 30:33, 20:180] == 0).all()))
        self.assertTrue(bool((out[..., :20, :] == 1).all()) and bool((out[..., 45:, :] == 1).all()))
        self.assertTrue(bool((augment.sauvola(torch.ones(1, 1, 64, 100), 31, 0.2) == 1).all()))


if __name__ == "__main__":
    unittest.main()
