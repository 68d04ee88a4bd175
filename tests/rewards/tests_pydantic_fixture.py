"""A pydantic model for the json_schema tests (imported by dotted path)."""

from pydantic import BaseModel, Field


class Person(BaseModel):
    name: str
    age: int = Field(ge=0)
