"""Lesson 00's demo exercise, counting a model's trainable parameters, and the lesson's quiz."""
