from __future__ import annotations

import factory

from studio.models import (
    Admissibility,
    ModelEndpoint,
    ModelPool,
    Primitive,
    Role,
    Run,
    RunEvent,
    Task,
    User,
)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User

    username = factory.Sequence(lambda n: f"user{n}")
    role = Role.VIEWER
    password = factory.django.Password("pw")


class PoolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ModelPool

    name = factory.Sequence(lambda n: f"pool-{n}")


class EndpointFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ModelEndpoint

    pool = factory.SubFactory(PoolFactory)
    name = factory.Sequence(lambda n: f"model-{n}")
    model = factory.LazyAttribute(lambda o: f"openai/{o.name}")


class PrimitiveFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Primitive
        django_get_or_create = ("name",)

    name = "direct"


class AdmissibilityFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Admissibility

    endpoint = factory.SubFactory(EndpointFactory)
    primitive = factory.SubFactory(PrimitiveFactory)


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Task

    owner = factory.SubFactory(UserFactory)
    text = factory.Sequence(lambda n: f"What is {n} + {n}?")
    benchmark = "arith"
    domain = "math"


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Run

    task = factory.SubFactory(TaskFactory)
    owner = factory.LazyAttribute(lambda o: o.task.owner)


class RunEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RunEvent

    run = factory.SubFactory(RunFactory)
    seq = factory.Sequence(lambda n: n + 1)
    type = "node.created"
