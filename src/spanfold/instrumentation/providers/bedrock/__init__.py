"""botocore's bedrock-runtime: Converse and InvokeModel, streamed or not."""
