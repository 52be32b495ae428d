"""A policy over a launch space: one categorical distribution per knob (independent logits),
trained by GRPO: a group of sampled configurations, rewards normalised within the group
(the advantage), a clipped policy-gradient step over a few epochs, and a KL penalty to the
initial (uniform) policy that keeps it from collapsing on one early winner."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from kdiff.tune.space import Config, Space

# Draws before giving up on an allowed configuration: exclusions are corners of the space, and
# while the allowed ones keep a probability p per draw, 1000 draws all miss with (1 - p)^1000,
# below 1e-4 for any p >= 1%; missing them all means the policy has collapsed onto them.
MAX_DRAWS = 1000


@dataclass
class GRPOSettings:
    group: int = 8        # configurations per group
    lr: float = 0.3       # Adam step on the logits
    clip: float = 0.2     # PPO's ratio clip
    epochs: int = 4       # gradient steps per group
    kl: float = 0.02      # weight of KL(policy || initial)
    penalty: float = -1.0  # reward of a configuration a gate rejects (correct: speedup > 0)


class Policy:
    def __init__(self, space: Space, settings: GRPOSettings, seed: int) -> None:
        self.space, self.settings = space, settings
        self.logits = [torch.zeros(len(k.choices), requires_grad=True) for k in space.knobs]
        self.initial = [torch.log_softmax(lg.detach(), 0) for lg in self.logits]
        self.opt = torch.optim.Adam(self.logits, lr=settings.lr)
        self.gen = torch.Generator().manual_seed(seed)

    def probabilities(self) -> list[list[float]]:
        return [torch.softmax(lg.detach(), 0).tolist() for lg in self.logits]

    def sample(self) -> Config:
        """One allowed configuration: each knob drawn from its distribution, redrawn while
        an exclusion rule matches (the product distribution conditioned on the allowed set)."""
        for _ in range(MAX_DRAWS):
            picks = [int(torch.multinomial(torch.softmax(lg.detach(), 0), 1,
                                           generator=self.gen)) for lg in self.logits]
            config = tuple((k.name, k.choices[i]) for k, i in zip(self.space.knobs, picks))
            if self.space.allowed(config):
                return config
        raise RuntimeError(f"no allowed configuration in {MAX_DRAWS} draws")

    def log_prob(self, configs: list[Config]) -> torch.Tensor:
        """Log-probability of each configuration under the product distribution (the
        exclusions' normalising constant is left out: it is common to the group)."""
        index = torch.tensor([self.space.index(c) for c in configs])
        return sum(torch.log_softmax(lg, 0)[index[:, i]] for i, lg in enumerate(self.logits))

    def kl_to_initial(self) -> torch.Tensor:
        return sum((torch.softmax(lg, 0) * (torch.log_softmax(lg, 0) - ref)).sum()
                   for lg, ref in zip(self.logits, self.initial))

    def update(self, configs: list[Config], rewards: list[float]) -> dict:
        """One GRPO step on a group; returns its statistics."""
        r = torch.tensor(rewards, dtype=torch.float32)
        # group-relative advantages; a group of equal rewards teaches nothing but the KL
        std = r.std(unbiased=False) if len(rewards) > 1 else torch.tensor(0.0)
        adv = (r - r.mean()) / std if std > 0 else torch.zeros_like(r)
        old = self.log_prob(configs).detach()
        s = self.settings
        for _ in range(s.epochs):
            ratio = torch.exp(self.log_prob(configs) - old)
            pg = -torch.min(ratio * adv, ratio.clamp(1 - s.clip, 1 + s.clip) * adv).mean()
            kl = self.kl_to_initial()
            loss = pg + s.kl * kl
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        return {"mean_reward": float(r.mean()), "max_reward": float(r.max()),
                "kl": float(self.kl_to_initial().detach())}
