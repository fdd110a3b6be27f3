"""The wire contract as data: problems, options, solutions, validation and errors."""

from models.consumer import (
    ConsumerMember,
    ConsumerOptions,
    ConsumerProblem,
    ConsumerSolution,
    ConsumerStats,
)
from models.consumer_index import ConsumerIndex, index_consumer_problem
from models.consumer_validation import validate_consumer_solution
from models.errors import ProblemError, parse

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
