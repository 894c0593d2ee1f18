"""The Python client of perceptrond.

    from perceptrond import Client
    with Client("127.0.0.1:50051") as client:
        model = client.create_model("spam", dimension=30)
        result = model.learn(X, y)          # numpy arrays or scipy.sparse CSR, as columns
        print(result.mistakes.sum(), result.stats.bound)

Errors raise PerceptronError, carrying the gRPC status code and the server's message.
"""
from .client import (TLS, Client, Issued, LearnResult, Model, PerceptronError, Stream,
                     list_models_across)

__all__ = ["Client", "Issued", "LearnResult", "Model", "PerceptronError", "Stream", "TLS",
           "list_models_across"]
