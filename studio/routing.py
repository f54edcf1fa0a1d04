from django.urls import path

from studio.consumers import EvaluationConsumer, RunConsumer, TrainingConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
    path("ws/training/<int:job_id>/", TrainingConsumer.as_asgi()),
    path("ws/evaluations/<int:evaluation_id>/", EvaluationConsumer.as_asgi()),
]
