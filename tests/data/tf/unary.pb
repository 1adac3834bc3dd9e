
6
xPlaceholder*
dtype0*
shape:
6
pPlaceholder*
dtype0*
shape:

NegNegx*
T0
"
IdentityIdentityNeg*
T0

AbsAbsx*
T0
$

Identity_1IdentityAbs*
T0

SquareSquarex*
T0
'

Identity_2IdentitySquare*
T0

SqrtSqrtp*
T0
%

Identity_3IdentitySqrt*
T0

RsqrtRsqrtp*
T0
&

Identity_4IdentityRsqrt*
T0

ExpExpx*
T0
$

Identity_5IdentityExp*
T0

LogLogp*
T0
$

Identity_6IdentityLog*
T0

TanhTanhx*
T0
%

Identity_7IdentityTanh*
T0

SigmoidSigmoidx*
T0
(

Identity_8IdentitySigmoid*
T0

ErfErfx*
T0
$

Identity_9IdentityErf*
T0

ErfcErfcx*
T0
&
Identity_10IdentityErfc*
T0

Abs_1Absx*
T0

Tanh_1TanhAbs_1*
T0

Exp_1ExpTanh_1*
T0

Log_1LogExp_1*
T0
'
Identity_11IdentityLog_1*
T0"ª