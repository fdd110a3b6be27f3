"""The wire contract as data: problems, options, solutions, validation and errors."""

from stickyd.models.consumer.index import ConsumerIndex, index_consumer_problem
from stickyd.models.consumer.problem import (
    ConsumerMember,
    ConsumerOptions,
    ConsumerProblem,
    ConsumerSolution,
    ConsumerStats,
)
from stickyd.models.consumer.validation import validate_consumer_solution
from stickyd.models.errors import ProblemError, parse

__all__ = [
    "ConsumerIndex",
    "ConsumerMember",
    "ConsumerOptions",
    "ConsumerProblem",
    "ConsumerSolution",
    "ConsumerStats",
    "ProblemError",
    "index_consumer_problem",
    "parse",
    "validate_consumer_solution",
]
