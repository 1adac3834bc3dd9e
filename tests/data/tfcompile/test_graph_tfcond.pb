
1
p_holdPlaceholder*
dtype0
*
shape:
1
x_holdPlaceholder*
dtype0*
shape:
1
y_holdPlaceholder*
dtype0*
shape:
.
cond/SwitchSwitchp_holdp_hold*
T0

1
cond/switch_tIdentitycond/Switch:1*
T0

/
cond/switch_fIdentitycond/Switch*
T0

)
cond/pred_idIdentityp_hold*
T0

Q
cond/Switch_1Switchx_holdcond/pred_id*
T0*
_class
loc:@x_hold
Q
cond/Switch_2Switchy_holdcond/pred_id*
T0*
_class
loc:@y_hold
E

cond/MergeMergecond/Switch_2cond/Switch_1:1*
N*
T0
'
resultIdentity
cond/Merge*
T0"ª