


x	êimage 

yprobs