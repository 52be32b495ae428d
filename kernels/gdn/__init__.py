"""Chunked Triton kernels for the gated linear recurrence family (Gated DeltaNet first), with
the sequential float64 oracle they are verified against."""
from kdiff.kernels.gdn.chunk import (
                                     ChunkGatedDeltaRuleFunction,
                                     chunk_gated_delta_rule,
                                     chunk_gla,
                                     chunk_kda,
                                     chunk_simple_gla,
)
from kdiff.kernels.gdn.reference import gated_delta_rule_reference, gated_recurrence

__all__ = ["ChunkGatedDeltaRuleFunction", "chunk_gated_delta_rule", "chunk_gla", "chunk_kda",
           "chunk_simple_gla", "gated_delta_rule_reference", "gated_recurrence"]
