"""Generalized Jensen-Shannon divergence (beta) between a student's and a teacher's distributions
over a vocabulary, from their logits, summed over the vocabulary and averaged over the rows:
beta * KL(P || M) + (1 - beta) * KL(Q || M), M = beta * P + (1 - beta) * Q, P the teacher's,
Q the student's."""
import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, student_logits, teacher_logits):
        log_q = torch.log_softmax(student_logits, dim=-1)
        log_p = torch.log_softmax(teacher_logits, dim=-1)
        q, p = log_q.exp(), log_p.exp()
        # log M in log space, so that a probability that underflows gives 0, not 0 * inf
        log_m = torch.logaddexp(log_p + math.log(beta), log_q + math.log(1 - beta))
        loss = beta * p * (log_p - log_m) + (1 - beta) * q * (log_q - log_m)
        return loss.sum() / student_logits.shape[0]


batch_size = 8
vocab = 256
beta = 0.3


def get_inputs():
    return [torch.randn(batch_size, vocab), torch.randn(batch_size, vocab)]


def get_init_inputs():
    return []
